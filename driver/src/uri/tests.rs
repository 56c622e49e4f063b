use super::*;
use crate::auth::AuthMechanism;
use crate::rt::{PemSource, Tls};

fn parse(uri: &str) -> ClientOptions {
    ClientOptions::parse_uri(uri).unwrap_or_else(|error| panic!("{uri}: {error}"))
}

fn error(uri: &str) -> String {
    match ClientOptions::parse_uri(uri) {
        Ok(options) => panic!("{uri} parsed: {options:?}"),
        Err(error) => error.to_string(),
    }
}

/// The official crate's shapes: a socket address converts, a unix socket's path is a
/// `PathBuf` (compared, displayed and written back into a connection string as given).
#[test]
fn server_addresses_from_socket_addresses_and_paths() {
    let v6: core::net::SocketAddr = "[::1]:27018".parse().unwrap();
    assert_eq!(
        ServerAddress::from(v6),
        ServerAddress::parse("[::1]:27018").unwrap()
    );
    let v4: core::net::SocketAddr = "127.0.0.1:27017".parse().unwrap();
    assert_eq!(
        ServerAddress::from(v4),
        ServerAddress::parse("127.0.0.1").unwrap()
    );
    let socket = ServerAddress::Unix {
        path: std::path::PathBuf::from("/tmp/m.sock"),
    };
    assert_eq!(socket, ServerAddress::parse("%2Ftmp%2Fm.sock").unwrap());
    assert_eq!(socket.to_string(), "/tmp/m.sock");
    assert_eq!(socket.host(), "/tmp/m.sock");
    assert_eq!(socket.to_uri_text(), "%2Ftmp%2Fm.sock");
}

#[test]
fn parses_hosts_database_and_options() {
    let options = parse(
        "mongodb://a.example:1,[::1]:2,B,%2Ftmp%2Fm.sock/my%3Ddb?TLS=true&tlsCAFile=%2Ftmp%2Fca.pem&connectTimeoutMS=250&appName=x",
    );
    let hosts: Vec<String> = options.hosts.iter().map(ToString::to_string).collect();
    assert_eq!(hosts, ["a.example:1", "[::1]:2", "b:27017", "/tmp/m.sock"]);
    assert_eq!(
        options.hosts[3],
        ServerAddress::Unix {
            path: "/tmp/m.sock".into()
        }
    );
    assert_eq!(options.default_database.as_deref(), Some("my=db"));
    assert_eq!(
        options.tls_options().unwrap().ca(),
        Some(PemSource::File("/tmp/ca.pem".as_ref()))
    );
    assert_eq!(options.connect_timeout, Some(Duration::from_millis(250)));
    assert_eq!(options.app_name.as_deref(), Some("x"));
    assert!(options.warnings.is_empty(), "{:?}", options.warnings);
}

#[test]
fn options_are_typed() {
    let options = parse(
        "mongodb://h/?readPreference=secondary&readPreferenceTags=dc:ny,rack:1&readPreferenceTags=&maxStalenessSeconds=120\
         &w=majority&journal=true&wTimeoutMS=5000&readConcernLevel=snapshot&compressors=zstd,zlib,bogus&zlibCompressionLevel=4\
         &maxPoolSize=0&minPoolSize=3&maxConnecting=5&maxIdleTimeMS=0&socketTimeoutMS=0&retryWrites=false\
         &serverMonitoringMode=poll&heartbeatFrequencyMS=500&proxyHost=p&proxyPort=1081&proxyUsername=u&proxyPassword=pw",
    );
    let Some(SelectionCriteria::ReadPreference(preference)) = &options.selection_criteria else {
        panic!("no read preference: {:?}", options.selection_criteria);
    };
    assert_eq!(preference.mode(), ReadPreferenceMode::Secondary);
    let first: TagSet = [("dc".into(), "ny".into()), ("rack".into(), "1".into())].into();
    assert_eq!(preference.tag_sets(), [first, TagSet::new()]);
    assert_eq!(preference.max_staleness(), Some(Duration::from_secs(120)));
    let write_concern = options.write_concern.as_ref().unwrap();
    assert_eq!(write_concern.w, Some(Acknowledgment::Majority));
    assert_eq!(write_concern.journal, Some(true));
    assert_eq!(write_concern.w_timeout, Some(Duration::from_secs(5)));
    assert_eq!(
        options.read_concern,
        Some(ReadConcern::new(ReadConcernLevel::Snapshot))
    );
    assert_eq!(
        options.compressors,
        Some(vec![Compressor::Zstd, Compressor::Zlib])
    );
    assert_eq!(options.zlib_compression_level, Some(4));
    assert_eq!(
        (
            options.max_pool_size,
            options.min_pool_size,
            options.max_connecting
        ),
        (Some(0), Some(3), Some(5))
    );
    assert_eq!(
        (options.max_idle_time, options.socket_timeout),
        (None, None)
    );
    assert_eq!(
        (options.retry_writes, options.retry_reads),
        (Some(false), None)
    );
    assert_eq!(
        options.server_monitoring_mode,
        Some(ServerMonitoringMode::Poll)
    );
    assert_eq!(options.heartbeat_freq, Some(Duration::from_millis(500)));
    let proxy = options.socks5_proxy.as_ref().unwrap();
    assert_eq!((proxy.host.as_str(), proxy.port), ("p", Some(1081)));
    assert_eq!(options.warnings.len(), 1, "{:?}", options.warnings);
    assert!(options.warnings[0].contains("bogus"));
}

#[test]
fn invalid_values_unknown_and_repeated_keys_are_warnings() {
    for (uri, needle) in [
        ("mongodb://h/?foo=bar", "Unsupported option 'foo'"),
        // Connection Monitoring and Pooling spec, "Deprecated Options": not
        // implemented, so ignored with a warning, as the URI options tests expect.
        (
            "mongodb://h/?waitQueueSize=10",
            "Unsupported option 'waitQueueSize' was ignored: a deprecated pool option",
        ),
        (
            "mongodb://h/?WAITQUEUEMULTIPLE=2",
            "Unsupported option 'WAITQUEUEMULTIPLE' was ignored: a deprecated pool option",
        ),
        ("mongodb://h/?journal=", "empty"),
        ("mongodb://h/?maxIdleTimeMS=-2", "from 0 to"),
        ("mongodb://h/?connectTimeoutMS=+5", "integer"),
        ("mongodb://h/?tls=yes", "true or false"),
        (
            "mongodb://h/?readPreference=Primary",
            "expected one of primary",
        ),
        ("mongodb://h/?readPreferenceTags=dc", "tag:value"),
        ("mongodb://h/?replicaSet=a&REPLICASET=b", "2 times"),
        ("mongodb://h/?wtimeout=5", "replaced with 'wTimeoutMS'"),
        (
            "mongodb://h/?wtimeout=5&wTimeoutMS=10",
            "ignored as found replacement",
        ),
        ("mongodb://h/?srvServiceName=x", ""),
        (
            "mongodb://u@h/?authMechanism=PLAIN&authMechanismProperties=A",
            "part 1",
        ),
    ] {
        match ClientOptions::parse_uri(uri) {
            Ok(options) => assert!(
                options.warnings.iter().any(|w| w.contains(needle)),
                "{uri}: {:?}",
                options.warnings
            ),
            // srvServiceName without mongodb+srv is an error, checked elsewhere.
            Err(_) => assert!(needle.is_empty(), "{uri}"),
        }
    }
    let options = parse("mongodb://h/?replicaSet=a&replicaSet=b&wtimeout=5&wTimeoutMS=10");
    assert_eq!(options.repl_set_name.as_deref(), Some("b"));
    assert_eq!(
        options.write_concern.unwrap().w_timeout,
        Some(Duration::from_millis(10))
    );
    // An invalid last value does not bring back an earlier one.
    assert_eq!(
        parse("mongodb://h/?maxPoolSize=5&maxPoolSize=x").max_pool_size,
        None
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    for (uri, needle) in [
        ("http://h", "must start with"),
        ("mongodb://", "no host"),
        ("mongodb:///tmp/m.sock", "must be URL encoded"),
        ("mongodb://h:0", "port"),
        ("mongodb://h:99999", "port"),
        ("mongodb://h:+1", "port"),
        ("mongodb://h:", "port"),
        ("mongodb://::1", "IPv6"),
        ("mongodb://[::1", "']'"),
        ("mongodb://[zz]", "IPv6"),
        ("mongodb://a b", "' '"),
        ("mongodb://%2Ftmp%2Fm", ".sock"),
        ("mongodb://h/a/b", "'/'"),
        ("mongodb://h/a$b", "'$'"),
        ("mongodb://h/?appName=%zz", "percent"),
        ("mongodb://h/?w", "no '=value'"),
        ("mongodb://h/?w=-1", "non-negative"),
        ("mongodb://u:p:q@h", "more than one"),
        ("mongodb://u@v@h", "'@'"),
        ("mongodb://u%zz@h", "'%'"),
        ("mongodb://u#@h", "'#'"),
        ("mongodb://h/?authMechanism=SCRAM-SHA-2", "authMechanism"),
        ("mongodb://h/?authSource=", "authSource"),
        ("mongodb+srv://a,b", "exactly one host"),
        ("mongodb+srv://a:27017", "port"),
        ("mongodb+srv://127.0.0.1", "host name"),
        ("mongodb+srv://%2Ftmp%2Fm.sock", "host name"),
    ] {
        let error = error(uri);
        assert!(error.contains(needle), "{uri}: {error}");
    }
}

#[test]
fn conflicting_options_are_errors() {
    for uri in [
        "mongodb://h/?tlsInsecure=false&tlsAllowInvalidHostnames=false",
        "mongodb://h/?tlsDisableOCSPEndpointCheck=true&tlsDisableCertificateRevocationCheck=false",
        "mongodb://h/?tls=true&ssl=false",
        "mongodb://h/?tls=false&tlsCAFile=ca.pem",
        "mongodb://a,b/?directConnection=true",
        "mongodb+srv://a.b.c/?directConnection=true",
        "mongodb://a,b/?loadBalanced=true",
        "mongodb://a/?loadBalanced=true&replicaSet=rs",
        "mongodb://a/?loadBalanced=true&directConnection=true",
        "mongodb://a/?srvMaxHosts=0",
        "mongodb://a/?srvServiceName=x",
        "mongodb://a/?srvAllowedHostsSuffix=.b",
        "mongodb+srv://a.b.c/?srvMaxHosts=1&replicaSet=rs",
        "mongodb+srv://a.b.c/?srvMaxHosts=1&loadBalanced=true",
        "mongodb://a/?readPreferenceTags=dc:ny",
        "mongodb://a/?maxStalenessSeconds=120",
        "mongodb://a/?w=0&journal=true",
        "mongodb://a/?proxyPort=1080",
        "mongodb://a/?proxyHost=p&proxyUsername=u",
        "mongodb://a/?proxyHost=p&proxyPassword=x",
        "mongodb://a/?proxyHost=p&proxyHost=q",
        "mongodb://a/?minPoolSize=5&maxPoolSize=2",
    ] {
        error(uri);
    }
    for uri in [
        "mongodb://h/?tls=true&SSL=TRUE&tls=true",
        "mongodb://a,b/?directConnection=false",
        "mongodb+srv://a.b.c/?directConnection=false&srvMaxHosts=0&replicaSet=rs",
        "mongodb://a/?loadBalanced=true&directConnection=false",
        "mongodb://a/?readPreference=nearest&readPreferenceTags=dc:ny&maxStalenessSeconds=90",
        "mongodb://a/?readPreferenceTags=&maxStalenessSeconds=-1",
        "mongodb://a/?proxyHost=p&proxyUsername=&proxyPassword=",
        "mongodb://a/?minPoolSize=5&maxPoolSize=0",
    ] {
        parse(uri);
    }
}

#[test]
fn tls_is_enabled_by_tls_options_and_srv() {
    assert!(parse("mongodb://h").tls.is_none());
    assert_eq!(parse("mongodb://h/?ssl=false").tls, Some(Tls::Disabled));
    let insecure = parse("mongodb://h/?tlsInsecure=true");
    let insecure = insecure.tls_options().unwrap();
    assert!(insecure.allows_invalid_certificates() && insecure.allows_invalid_hostnames());
    let srv = parse("mongodb+srv://Cluster0.example.com/?srvServiceName=svc&srvMaxHosts=2");
    assert!(srv.srv && srv.tls_options().is_some());
    assert_eq!(
        srv.hosts,
        [ServerAddress::tcp("cluster0.example.com", DEFAULT_PORT)]
    );
    assert_eq!(srv.srv_service_name.as_deref(), Some("svc"));
    assert_eq!(srv.srv_max_hosts, Some(2));
    assert_eq!(
        parse("mongodb+srv://a.b.c/?tls=false").tls,
        Some(Tls::Disabled)
    );
}

#[test]
fn credentials_come_from_userinfo_and_auth_options() {
    let options = parse("mongodb://us%40er:p%3Ass@h/db?authMechanism=SCRAM-SHA-256");
    let credential = options.credential.unwrap();
    assert_eq!(credential.username.as_deref(), Some("us@er"));
    assert_eq!(credential.password.as_deref(), Some("p:ss"));
    assert_eq!(credential.mechanism, Some(AuthMechanism::ScramSha256));
    assert_eq!(credential.source.as_deref(), Some("db"));
    // The database alone, or authSource alone, asks for no authentication.
    assert_eq!(parse("mongodb://h/db?authSource=x").credential, None);
    let x509 = parse("mongodb://h/?authMechanism=MONGODB-X509")
        .credential
        .unwrap();
    assert_eq!(x509.username, None);
}

#[test]
fn secrets_are_never_shown() {
    let uri = "mongodb://user:hunter1@h/?tlsCertificateKeyFile=k.pem&tlsCertificateKeyFilePassword=hunter2\
               &proxyHost=p&proxyUsername=pu&proxyPassword=hunter3";
    let options = parse(uri);
    for shown in [
        format!("{options:?}"),
        format!("{options:#?}"),
        options.to_string(),
    ] {
        assert!(!shown.contains("hunter"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
    assert_eq!(
        options.to_string(),
        "mongodb://user:<redacted>@h/?authSource=admin&proxyHost=p&proxyPassword=<redacted>\
         &proxyUsername=pu&tls=true&tlsCertificateKeyFile=k.pem&tlsCertificateKeyFilePassword=<redacted>"
    );
    // Neither errors nor warnings quote a password.
    for uri in [
        "mongodb://user:hunter1 x@h",
        "mongodb://user:hunter1%ff@h",
        "mongodb://user:hunter1@h/?tlsCertificateKeyFilePassword=",
        "mongodb://user:hunter1/x@h/db",
        "mongodb://user:1/hunter1@h/db",
        "mongodb://user:hunter1?x@h/db",
        "mongodb://user:1?hunter1@h/?w=1",
        "mongodb://h/?proxyHost=p&proxyUsername=u&proxyPassword=hunter1%zz",
        // MONGODB-AWS takes no credentials from the connection string: refused unquoted.
        "mongodb://k:hunter1@h/?authMechanism=MONGODB-AWS",
        "mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:hunter1",
    ] {
        let shown = match ClientOptions::parse_uri(uri) {
            Ok(options) => format!("{:?}", options.warnings),
            Err(error) => error.to_string(),
        };
        assert!(!shown.contains("hunter"), "{shown}");
    }
}

#[test]
fn options_set_in_code_override_the_connection_string_and_are_validated() {
    let options = ClientOptions::parse_with("mongodb://h/?replicaSet=rs&maxPoolSize=5", |o| {
        o.repl_set_name = None;
        o.max_pool_size = Some(7);
        o.load_balanced = Some(true);
    })
    .unwrap();
    assert_eq!(
        (options.repl_set_name, options.max_pool_size),
        (None, Some(7))
    );
    let conflict = ClientOptions::parse_with("mongodb://h/?replicaSet=rs", |o| {
        o.load_balanced = Some(true);
    });
    assert!(conflict.unwrap_err().to_string().contains("replicaSet"));
    let mut options = ClientOptions::default();
    assert_eq!(options.validate(), Ok(()));
    options.zlib_compression_level = Some(10);
    assert!(options.validate().is_err());
}

#[test]
fn uri_option_reads_values_back() {
    let options =
        parse("mongodb://h/?W=2&wtimeoutms=100&readPreference=nearest&readPreferenceTags=a:b");
    assert_eq!(options.uri_option("w"), Some(Bson::Int32(2)));
    assert_eq!(options.uri_option("wTimeout"), Some(Bson::Int64(100)));
    assert_eq!(
        options.uri_option("readpreference"),
        Some(Bson::String("nearest".into()))
    );
    assert_eq!(
        options.uri_option("readPreferenceTags"),
        Some(Bson::Array(vec![Bson::Document(bson::doc! { "a": "b" })]))
    );
    assert_eq!(options.uri_option("tlsCAFile"), None);
    assert_eq!(options.uri_option("nonsense"), None);
}

#[test]
fn display_writes_a_connection_string_that_parses_back() {
    for uri in [
        "mongodb://h:27017/",
        "mongodb://a:1,[::1]:2,%2Ftmp%2Fm%20x.sock/d%3Fb?replicaSet=rs&w=majority&readPreference=secondary\
         &readPreferenceTags=dc:ny,rack:1&readPreferenceTags=&compressors=zlib,snappy&appName=my%20app",
        "mongodb+srv://u@c.example.com/?authMechanism=PLAIN&srvMaxHosts=3&tls=false",
        "mongodb://h/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:azure,TOKEN_RESOURCE:mongodb://x",
    ] {
        let options = parse(uri);
        let text = options.to_string();
        assert_eq!(parse(&text), options, "{uri} -> {text}");
    }
}

/// A small xorshift generator: deterministic, no dependency.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n).unwrap()).unwrap()
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// Valid connection strings, with a little of everything, to mutate.
const SEEDS: &[&str] = &[
    "mongodb://localhost",
    "mongodb://alice:secret@example.com,[::1]:27019/admin?replicaSet=rs&w=2",
    "mongodb://%2Ftmp%2Fmongodb-27017.sock,rel%2Fm.sock/admin.sock?tls=true&tlsCAFile=ca.pem",
    "mongodb+srv://test1.test.build.10gen.cc/?srvMaxHosts=2&srvServiceName=customname",
    "mongodb://u%40x:p%3A@h:1/db?authMechanism=SCRAM-SHA-1&authSource=other",
    "mongodb://h/?readPreference=primaryPreferred&readPreferenceTags=dc:ny,rack:1&maxStalenessSeconds=120&readPreferenceTags=dc:ny",
    "mongodb://h/?authMechanism=MONGODB-OIDC&authMechanismProperties=TOKEN_RESOURCE:mongodb://foo,ENVIRONMENT:azure",
    "mongodb://h?compressors=snappy,zlib&zlibCompressionLevel=9&wtimeout=5",
    "mongodb://h/?proxyHost=p&proxyPort=1081&proxyUsername=u&proxyPassword=x&loadBalanced=true",
    "mongodb://bücher.example.com/?appName=x&heartbeatFrequencyMS=500&tlsInsecure=true",
];

const ALPHABET: &[&str] = &[
    "mongodb://",
    "mongodb+srv://",
    "a",
    "Z",
    "0",
    "9",
    ".",
    "-",
    "_",
    "~",
    ":",
    "/",
    "?",
    "@",
    "&",
    "=",
    ",",
    ";",
    "%",
    "%2F",
    "%3A",
    "%zz",
    "%e",
    "[",
    "]",
    "::1",
    "$",
    " ",
    "+",
    "ü",
    "\u{1F600}",
    ".sock",
    "tls",
    "ssl",
    "true",
    "false",
    "w",
    "-1",
    "65536",
    "readPreferenceTags",
    "authMechanism",
    "MONGODB-X509",
    "srvMaxHosts",
    "loadBalanced",
    "directConnection",
    "replicaSet",
];

/// A random change to `uri`, on character boundaries.
fn mutate(rng: &mut XorShift, uri: &str) -> String {
    let mut chars: Vec<char> = uri.chars().collect();
    for _ in 0..=rng.below(3) {
        let at = rng.below(chars.len() + 1);
        match rng.below(4) {
            0 if at < chars.len() => {
                chars.remove(at);
            }
            1 if at < chars.len() => chars[at] = rng.pick(ALPHABET).chars().next().unwrap_or('x'),
            2 => chars.truncate(at),
            _ => {
                let piece: Vec<char> = rng.pick(ALPHABET).chars().collect();
                chars.splice(at..at, piece);
            }
        }
    }
    chars.into_iter().collect()
}

/// No input panics; whatever parses is valid, and (when it holds no secret) prints as a
/// connection string that parses back to the same options.
#[test]
fn fuzzed_connection_strings_never_panic() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut parsed = 0;
    for round in 0..40_000 {
        let uri = if round % 3 == 0 {
            let mut uri = String::from(rng.pick(&["mongodb://", "mongodb+srv://", ""]));
            for _ in 0..rng.below(12) {
                uri.push_str(rng.pick(ALPHABET));
            }
            uri
        } else {
            let seed = rng.pick(SEEDS);
            mutate(&mut rng, seed)
        };
        let Ok(options) = ClientOptions::parse_uri(&uri) else {
            continue;
        };
        parsed += 1;
        assert_eq!(options.validate(), Ok(()), "{uri}");
        let text = options.to_string();
        if !text.contains("<redacted>") {
            let mut again =
                ClientOptions::parse_uri(&text).unwrap_or_else(|e| panic!("{uri} -> {text}: {e}"));
            again.warnings.clone_from(&options.warnings);
            assert_eq!(again, options, "{uri} -> {text}");
        }
    }
    assert!(parsed > 5000, "only {parsed} fuzzed strings parsed");
}

/// `timeoutMS` (Client Side Operations Timeout spec): a non-negative integer, where 0
/// means "no limit" and is kept apart from unset; anything else is ignored with a
/// warning.
#[test]
fn timeout_ms_is_a_non_negative_integer_and_zero_is_kept() {
    assert_eq!(parse("mongodb://h/").timeout, None);
    assert_eq!(
        parse("mongodb://h/?timeoutMS=100").timeout,
        Some(Duration::from_millis(100))
    );
    assert_eq!(
        parse("mongodb://h/?TIMEOUTMS=0").timeout,
        Some(Duration::ZERO)
    );
    // An invalid value is ignored with a warning, as for the other options.
    for uri in [
        "mongodb://h/?timeoutMS=-2",
        "mongodb://h/?timeoutms=invalid",
    ] {
        let options = parse(uri);
        assert_eq!(options.timeout, None, "{uri}");
        assert!(
            options
                .warnings
                .iter()
                .any(|w| w.to_lowercase().contains("timeoutms")),
            "{uri}: {:?}",
            options.warnings
        );
    }
}

/// Issue 21: `proxyPassword=Pr0x&yPass` was refused with "option 'yPass' has no
/// '=value'", and `proxyPassword=Pr0x&yPass=1` accepted with the password cut to
/// "Pr0x". The piece after an option holding a secret is never quoted; when it is not
/// a known option the connection string is refused with the percent-encoding to use.
#[test]
fn a_secret_cut_at_an_ampersand_is_never_quoted() {
    let proxy = "mongodb://h/?proxyHost=p&proxyPassword=";
    let tls = "mongodb://h/?tlsCertificateKeyFilePassword=";
    let aws = "mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:";
    for (prefix, option) in [
        (proxy, "proxyPassword"),
        (tls, "tlsCertificateKeyFilePassword"),
        (aws, "authMechanismProperties"),
    ] {
        for rest in [
            "Qz7w&Vk9t",
            "Qz7w&Vk9t=1",
            "Qz7w&Vk9t=1&tls=true",
            "Qz7w&&Vk9t",
            "Qz7w&Vk%ZZ9t=1",
            "Qz7w&Vk9t%=1",
        ] {
            let uri = format!("{prefix}{rest}");
            let err = ClientOptions::parse_uri(&uri).expect_err(&uri);
            for shown in [err.to_string(), format!("{err:?}"), format!("{err:#?}")] {
                for part in ["Qz7w", "Vk9t", "Vk"] {
                    assert!(!shown.contains(part), "{uri}: {shown}");
                }
                assert!(
                    shown.contains(option) && shown.contains("%26"),
                    "{uri}: {shown}"
                );
            }
        }
    }
    // The example of the issue: the message names the option, not 'yPass'.
    let message = error("mongodb://h/?proxyHost=p&proxyPassword=Pr0x&yPass");
    assert!(
        !message.contains("Pr0x") && !message.contains("'yPass'"),
        "{message}"
    );
}

/// A known option after a secret is an option: the secret is taken as given.
#[test]
fn a_known_option_after_a_secret_is_applied() {
    let options =
        parse("mongodb://h/?proxyHost=p&proxyUsername=u&proxyPassword=Qz7w&tls=true&appName=a");
    assert_eq!(
        options.socks5_proxy.unwrap().authentication,
        Some(("u".to_string(), "Qz7w".to_string()))
    );
    assert!(options.tls.is_some());
    assert!(options.warnings.is_empty(), "{:?}", options.warnings);
    // Elsewhere an unknown option is still a warning, naming it.
    let options = parse("mongodb://h/?appName=a&Vk9t=1");
    assert_eq!(options.warnings, ["Unsupported option 'Vk9t' was ignored."]);
}
