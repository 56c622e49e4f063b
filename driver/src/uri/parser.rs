//! Splitting a connection string into its parts (Connection String spec, "Reference
//! Implementation") and applying its options.

use std::collections::{HashMap, HashSet};

use super::address::ServerAddress;
use super::encoding::{has_stray_percent, percent_decode};
use super::options::{self, Alias, Problem, Repeat, Staging, UriOption};
use super::{ClientOptions, Tls};
use crate::auth::Credential;
use crate::error::{Error, Result};
use crate::rt::TlsOptions;
use crate::selection::SelectionCriteria;

const SCHEME: &str = "mongodb://";
const SRV_SCHEME: &str = "mongodb+srv://";

/// Characters a database name must not contain once decoded (Connection String spec,
/// "Auth Database").
const DATABASE_FORBIDDEN: &[char] = &['/', '\\', ' ', '"', '$'];

/// Pairs of options that must not appear together (URI Options spec, "Conflicting TLS
/// options", rules 1 to 7).
const TLS_CONFLICTS: [(&str, &str); 7] = [
    ("tlsInsecure", "tlsAllowInvalidCertificates"),
    ("tlsInsecure", "tlsAllowInvalidHostnames"),
    ("tlsInsecure", "tlsDisableOCSPEndpointCheck"),
    ("tlsInsecure", "tlsDisableCertificateRevocationCheck"),
    ("tlsAllowInvalidCertificates", "tlsDisableOCSPEndpointCheck"),
    (
        "tlsAllowInvalidCertificates",
        "tlsDisableCertificateRevocationCheck",
    ),
    (
        "tlsDisableOCSPEndpointCheck",
        "tlsDisableCertificateRevocationCheck",
    ),
];

/// Parses a connection string into options, before the cross-option checks of
/// [`ClientOptions::validate`].
pub(super) fn parse(uri: &str) -> Result<ClientOptions> {
    let (srv, rest) = if let Some(rest) = uri.strip_prefix(SRV_SCHEME) {
        (true, rest)
    } else if let Some(rest) = uri.strip_prefix(SCHEME) {
        (false, rest)
    } else {
        return Err(Error::invalid_argument(
            "a connection string must start with 'mongodb://' or 'mongodb+srv://'",
        ));
    };
    // The host information ends at the first '/' or, without one, at the first '?'.
    let (authority, path_and_query) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    // An '@' after the host information that is not inside an option's value most
    // likely ends user information holding an unescaped '/' or '?'
    // ("mongodb://user:pa/ss@host"): refuse it before any message can quote a piece of
    // the password as a host, database or option.
    if let Some(at) = path_and_query.find('@') {
        if path_and_query.find('=').is_none_or(|equals| at < equals) {
            return Err(Error::invalid_argument(
                "'@' after the host information: a '/' or '?' in the user name or password, or an '@' in the database name, must be URL encoded",
            ));
        }
    }
    let (userinfo, host_list) = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => (Some(parse_userinfo(userinfo)?), hosts),
        None => (None, authority),
    };
    let hosts = parse_hosts(host_list, path_and_query, srv)?;

    let path_and_query = path_and_query.strip_prefix('/').unwrap_or(path_and_query);
    let (database, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query, ""));
    let default_database = parse_database(database)?;

    let mut staging = Staging {
        options: ClientOptions {
            hosts,
            srv,
            default_database,
            ..ClientOptions::default()
        },
        tls: TlsOptions::default(),
        tls_enabled: None,
        auth: Credential::default(),
        read_preference: Default::default(),
        proxy: Default::default(),
    };
    let given = apply_options(&mut staging, query)?;
    finish(staging, userinfo, &given)
}

/// Splits and decodes the user information (Connection String spec, "Userinfo").
/// Error messages never quote it: it holds the password.
fn parse_userinfo(userinfo: &str) -> Result<(String, Option<String>)> {
    let refuse = |what: &str| {
        Err(Error::invalid_argument(format!(
            "the user information {what}: the user name and password must be URL encoded"
        )))
    };
    if userinfo.contains('@') {
        return refuse("contains an unescaped '@'");
    }
    if userinfo.matches(':').count() > 1 {
        return refuse("contains more than one unescaped ':'");
    }
    if has_stray_percent(userinfo) {
        return refuse("contains a '%' that does not start a %XX escape");
    }
    // RFC 3986 section 3.2.1: userinfo = *( unreserved / pct-encoded / sub-delims / ":" ).
    // Non-ASCII text is accepted as is (the spec's Q&A allows non-ASCII characters).
    let allowed =
        |c: char| !c.is_ascii() || c.is_ascii_alphanumeric() || "-._~%!$&'()*+,;=:".contains(c);
    if let Some(c) = userinfo.chars().find(|c| !allowed(*c)) {
        return refuse(&format!("contains '{}'", c.escape_default()));
    }
    let (username, password) = match userinfo.split_once(':') {
        Some((username, password)) => (username, Some(password)),
        None => (userinfo, None),
    };
    let decode = |text: &str| percent_decode(text, "the user name or password");
    Ok((decode(username)?, password.map(decode).transpose()?))
}

/// Parses the host list (Connection String spec, "Host Information"), with the checks
/// of the Initial DNS Seedlist Discovery spec for `mongodb+srv` ("Validation Before
/// Querying DNS": one host name, no port).
fn parse_hosts(host_list: &str, after: &str, srv: bool) -> Result<Vec<ServerAddress>> {
    if host_list.is_empty() {
        return Err(Error::invalid_argument(
            if after.starts_with('/') && after.len() > 1 {
                "the connection string names no host (a unix domain socket path must be URL encoded, %2F for '/')"
            } else {
                "the connection string names no host"
            },
        ));
    }
    let hosts = host_list
        .split(',')
        .map(ServerAddress::parse)
        .collect::<Result<Vec<_>>>()?;
    if srv {
        if hosts.len() != 1 {
            return Err(Error::invalid_argument(
                "a mongodb+srv connection string must name exactly one host",
            ));
        }
        if host_list.contains(':') {
            return Err(Error::invalid_argument(
                "a mongodb+srv connection string cannot give a port",
            ));
        }
        if hosts
            .iter()
            .any(|host| host.is_ip_literal() || host.tcp_port().is_none())
        {
            return Err(Error::invalid_argument(
                "a mongodb+srv connection string must name a host name, not an IP address or socket",
            ));
        }
    }
    Ok(hosts)
}

/// Decodes and checks the database in the path (Connection String spec, "Auth Database").
fn parse_database(database: &str) -> Result<Option<String>> {
    if database.is_empty() {
        return Ok(None);
    }
    let decoded = percent_decode(database, &format!("the database '{database}'"))?;
    if let Some(c) = decoded.chars().find(|c| DATABASE_FORBIDDEN.contains(c)) {
        return Err(Error::invalid_argument(format!(
            "the database name '{decoded}' contains '{c}', which is not allowed"
        )));
    }
    Ok(Some(decoded))
}

/// One `key=value` of the query that names a known option.
struct Given {
    option: &'static UriOption,
    alias: Option<&'static Alias>,
    key: String,
    value: String,
}

/// Applies the options of the query, in order, and returns the names of those that
/// were given (for the checks that depend on which options appear).
fn apply_options(staging: &mut Staging, query: &str) -> Result<Vec<&'static str>> {
    let warnings = &mut staging.options.warnings;
    let mut given = read_pairs(query, warnings)?;
    let present = given.iter().map(|g| g.option.name).collect();
    drop_replaced_keys(&mut given, warnings);
    for g in resolve_repeats(&given, warnings)? {
        match (g.option.set)(staging, &g.value) {
            Ok(()) => {}
            Err(Problem::Invalid(why)) => {
                let value = if g.option.secret {
                    "<redacted>"
                } else {
                    &g.value
                };
                staging.options.warnings.push(format!(
                    "Unsupported value for '{}': '{value}' ({why}); the option was ignored.",
                    g.key
                ));
            }
            Err(Problem::Fatal(error)) => return Err(error),
        }
    }
    Ok(present)
}

/// Splits the query into decoded `key=value` pairs of known options; unknown keys are
/// ignored with a warning (Connection String spec, "Keys").
///
/// A value that holds a secret (`proxyPassword`, `tlsCertificateKeyFilePassword`,
/// `authMechanismProperties` with an `AWS_SESSION_TOKEN`) and an unescaped `&` is cut
/// there: its rest reads as the next piece of the query. So the piece right after
/// such an option is never quoted, and when it is not a known `option=value` pair (no
/// `=`, a bad escape in its key, or an unknown key — the shapes the rest of a secret
/// takes) the connection string is refused, naming only the option before it and the
/// escape to use. An unknown option there would otherwise be ignored with a warning,
/// and the secret silently cut. A known option after a secret is taken as given: a
/// secret cut right before `tls=true` cannot be told from two options.
fn read_pairs(query: &str, warnings: &mut Vec<String>) -> Result<Vec<Given>> {
    let mut given = Vec::new();
    // The option just read, if its value may hold a secret.
    let mut after_secret: Option<&'static str> = None;
    for piece in query.split('&').filter(|piece| !piece.is_empty()) {
        let pair = piece.split_once('=');
        let key = pair.map(|(key, _)| percent_decode(key, &format!("the option key '{key}'")));
        let found = match &key {
            Some(Ok(key)) => options::find(key),
            _ => None,
        };
        if let (Some(secret), None) = (after_secret, found) {
            return Err(cut_secret(secret));
        }
        let (Some((_, value)), Some(key)) = (pair, key) else {
            return Err(Error::invalid_argument(format!(
                "the connection string option '{piece}' has no '=value'"
            )));
        };
        let key = key?;
        after_secret = None;
        match found {
            Some((option, alias)) => {
                if option.may_hold_secret {
                    after_secret = Some(option.name);
                }
                given.push(Given {
                    option,
                    alias,
                    value: percent_decode(value, &format!("the value of '{key}'"))?,
                    key,
                });
            }
            None => {
                let why = options::LEFT_OUT
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case(&key))
                    .map_or(String::new(), |(_, why)| format!(": {why}"));
                warnings.push(format!("Unsupported option '{key}' was ignored{why}."))
            }
        }
    }
    Ok(given)
}

/// The error for a piece of the query that follows the option `secret` and is not a
/// known option: most likely the rest of the secret, so it is not quoted.
fn cut_secret(secret: &str) -> Error {
    Error::invalid_argument(format!(
        "the connection string has something after the option '{secret}' that is not a known option=value pair; \
         it is not shown, as it may be the rest of the value of '{secret}' cut at an '&': \
         percent-encode the value, '&' as %26 (and '%' as %25, '=' as %3D)"
    ))
}

/// Connection String spec, "Deprecated Key Value Pairs": a deprecated key is used with
/// a warning, unless its replacement is given too, in which case it is dropped.
fn drop_replaced_keys(given: &mut Vec<Given>, warnings: &mut Vec<String>) {
    // The options given under their own name, collected once: asking the whole list
    // for each deprecated key would cost the square of the query's length.
    let unaliased: HashSet<&str> = given
        .iter()
        .filter(|g| g.alias.is_none())
        .map(|g| g.option.name)
        .collect();
    given.retain(|g| {
        let Some(alias) = g.alias.filter(|alias| alias.deprecated) else {
            return true;
        };
        let replaced = unaliased.contains(g.option.name);
        warnings.push(if replaced {
            format!(
                "Deprecated key '{}' present and ignored as found replacement '{}'.",
                g.key, alias.target
            )
        } else {
            format!(
                "Deprecated key '{}' has been replaced with '{}'.",
                g.key, alias.target
            )
        });
        !replaced
    });
}

/// How often an option appears in the query, where last, and whether its values
/// agree (case-insensitively).
struct Occurrences<'a> {
    count: usize,
    last: usize,
    first_value: &'a str,
    agree: bool,
}

/// Connection String spec, "Repeated Keys", with the exceptions of [`Repeat`]: returns
/// the occurrences to apply, in order.
fn resolve_repeats<'a>(given: &'a [Given], warnings: &mut Vec<String>) -> Result<Vec<&'a Given>> {
    // One pass counts each option's occurrences (options are keyed by their unique
    // name, aliases included), so that the decisions below are linear: comparing each
    // occurrence with every other cost the square of the query's length (20,000
    // repeats of `tls=true` took seconds).
    let mut occurrences: HashMap<&str, Occurrences> = HashMap::new();
    for (index, g) in given.iter().enumerate() {
        let seen = occurrences
            .entry(g.option.name)
            .or_insert_with(|| Occurrences {
                count: 0,
                last: index,
                first_value: &g.value,
                agree: true,
            });
        seen.count += 1;
        seen.last = index;
        seen.agree &= seen.first_value.eq_ignore_ascii_case(&g.value);
    }
    let mut apply = Vec::new();
    for (index, g) in given.iter().enumerate() {
        // Every option of `given` was counted above.
        let seen = &occurrences[g.option.name];
        let last = seen.last == index;
        match g.option.repeat {
            Repeat::Accumulate => apply.push(g),
            _ if seen.count == 1 => apply.push(g),
            Repeat::Never => {
                return Err(Error::invalid_argument(format!(
                    "the option '{}' is given more than once",
                    g.option.name
                )))
            }
            Repeat::MustAgree if !seen.agree => {
                return Err(Error::invalid_argument(format!(
                    "the option '{}' is given different values (counting its aliases)",
                    g.option.name
                )))
            }
            Repeat::MustAgree if last => apply.push(g),
            Repeat::LastWins if last => {
                warnings.push(format!(
                    "The option '{}' is given {} times; the last value is used.",
                    g.option.name, seen.count
                ));
                apply.push(g);
            }
            Repeat::MustAgree | Repeat::LastWins => {}
        }
    }
    Ok(apply)
}

/// Settles TLS and the credential, and applies the checks that depend on which options
/// appear in the connection string (rather than on their values).
fn finish(
    staging: Staging,
    userinfo: Option<(String, Option<String>)>,
    given: &[&'static str],
) -> Result<ClientOptions> {
    let Staging {
        mut options,
        tls,
        tls_enabled,
        auth,
        read_preference,
        proxy,
    } = staging;
    options.selection_criteria = read_preference.build()?.map(SelectionCriteria::from);
    options.socks5_proxy = proxy.build()?;
    let appears = |name: &str| given.iter().any(|given| given.eq_ignore_ascii_case(name));

    for (a, b) in TLS_CONFLICTS {
        if appears(a) && appears(b) {
            return Err(Error::invalid_argument(format!(
                "the options '{a}' and '{b}' cannot be given together"
            )));
        }
    }
    // URI Options spec, "tls": "drivers may enable TLS by default if other
    // tls-prefixed options are present". Here they do; `mongodb+srv` enables TLS too
    // (Initial DNS Seedlist Discovery spec); an explicit `tls` / `ssl` decides.
    let tls_option = given
        .iter()
        .find(|name| name.starts_with("tls") && **name != "tls");
    options.tls = match (tls_enabled, tls_option) {
        (Some(false), Some(name)) => {
            return Err(Error::invalid_argument(format!(
                "the option '{name}' cannot be given with tls=false"
            )))
        }
        (Some(false), None) => Some(Tls::Disabled),
        (Some(true), _) => Some(Tls::Enabled(tls)),
        (None, tls_option) => (options.srv || tls_option.is_some()).then_some(Tls::Enabled(tls)),
    };
    // Initial DNS Seedlist Discovery spec, "URI Validation".
    if !options.srv {
        if let Some(name) = given.iter().find(|name| name.starts_with("srv")) {
            return Err(Error::invalid_argument(format!(
                "the option '{name}' is only valid in a mongodb+srv connection string"
            )));
        }
    }
    // A credential exists when the connection string has user information or names a
    // mechanism (Authentication spec: "authSource without username doesn't create
    // credential").
    if userinfo.is_some() || auth.mechanism.is_some() {
        let (username, password) = match userinfo {
            Some((username, password)) => (Some(username), password),
            None => (None, None),
        };
        let credential = Credential {
            username,
            password,
            ..auth
        };
        options.credential =
            Some(credential.resolve_from_uri(options.default_database.as_deref())?);
    }
    Ok(options)
}
