//! The official `mongodb` crate's Cargo features, as its documentation lists them:
//! a `Cargo.toml` written for it names features that anymongo must know, since cargo
//! refuses a dependency with a feature its package lacks. Each is either accepted
//! (with the meaning `driver/Cargo.toml` documents) or stops the build with a message
//! saying why (`driver/src/lib.rs`).

use anymongo_tests::setup::workspace_root;

/// Every feature of the official crate 3.x.
const OFFICIAL: &[&str] = &[
    "aws-auth",
    "azure-kms",
    "azure-oidc",
    "bson-2",
    "bson-3",
    "cert-key-password",
    "compat-3-0-0",
    "compat-3-3-0",
    "dns-resolver",
    "error-backtrace",
    "gcp-kms",
    "gcp-oidc",
    "gssapi-auth",
    "in-use-encryption",
    "in-use-encryption-unstable",
    "log",
    "openssl-tls",
    "opentelemetry",
    "redact-errors",
    "rustls-tls",
    "rustls-tls-aws-lc",
    "snappy-compression",
    "socks5-proxy",
    "sync",
    "text-indexes-unstable",
    "tracing-unstable",
    "zlib-compression",
    "zstd-compression",
];

/// Those anymongo cannot give: the build stops with a `compile_error!`.
const REFUSED: &[&str] = &[
    "azure-kms",
    "gcp-kms",
    "gssapi-auth",
    "in-use-encryption",
    "redact-errors",
];

/// The features `driver/Cargo.toml` declares.
fn declared() -> Vec<String> {
    let manifest = std::fs::read_to_string(workspace_root().join("driver/Cargo.toml")).unwrap();
    manifest
        .lines()
        .skip_while(|line| line.trim() != "[features]")
        .skip(1)
        .take_while(|line| !line.starts_with('['))
        .filter_map(|line| {
            line.split_once(" = ")
                .map(|(name, _)| name.trim().to_owned())
        })
        .filter(|name| !name.starts_with('#'))
        .collect()
}

#[test]
fn every_official_feature_is_declared() {
    let declared = declared();
    for feature in OFFICIAL {
        assert!(
            declared.iter().any(|name| name == feature),
            "the official feature `{feature}` is not declared: a Cargo.toml naming it fails"
        );
    }
}

#[test]
fn each_refused_feature_stops_the_build_with_its_reason() {
    let lib = std::fs::read_to_string(workspace_root().join("driver/src/lib.rs")).unwrap();
    for feature in REFUSED {
        let gate = format!("feature = \"{feature}\"");
        let at = lib
            .find(&gate)
            .unwrap_or_else(|| panic!("no cfg on `{feature}` in driver/src/lib.rs"));
        let after = &lib[at..];
        let message = &after[after.find("compile_error!(").expect("a compile_error!")..];
        assert!(
            message[..message.find(");").unwrap()].contains(&format!("`{feature}`")),
            "the message for `{feature}` does not name it"
        );
    }
}
