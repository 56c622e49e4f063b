//! Certificates for the TLS tests, made at test time with `rcgen`.
//!
//! [`generate`] writes a CA, a server certificate it signs (for `localhost`, `127.0.0.1`
//! and `::1`), a client certificate it signs (subject [`CLIENT_SUBJECT`], for mutual TLS
//! and MONGODB-X509; its key also encrypted), and a second, unrelated CA that trusts
//! none of them. [`generate_flawed`] writes server certificates that fail verification
//! (another host's, an expired one) for the `tlsAllowInvalid*` tests.

use std::fs;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

/// The subject of the client certificate in RFC 2253 form: the user name that
/// MONGODB-X509 authenticates as.
pub const CLIENT_SUBJECT: &str = "CN=client,OU=tests,O=anymongo";

/// The PEM files written by [`generate`].
#[derive(Clone, Debug)]
pub struct TestCerts {
    /// The folder holding every file below.
    pub dir: PathBuf,
    /// The CA that signed the server and client certificates.
    pub ca_pem: PathBuf,
    /// The server's certificate, valid for `localhost`, `127.0.0.1` and `::1`.
    pub server_cert: PathBuf,
    /// The server's private key.
    pub server_key: PathBuf,
    /// A CA that signed nothing here: trusting only it must fail the handshake.
    pub untrusted_ca_pem: PathBuf,
    /// The client's certificate followed by its private key (`tlsCertificateKeyFile`).
    pub client_cert_and_key: PathBuf,
    /// The same certificate followed by the same key as an encrypted PKCS#8 PEM
    /// (`ENCRYPTED PRIVATE KEY`, PBES2: PBKDF2-SHA256 and AES-256-CBC) whose password
    /// is [`KEY_PASSWORD`] (`tlsCertificateKeyFilePassword`).
    pub client_cert_and_encrypted_key: PathBuf,
}

/// The password of [`TestCerts::client_cert_and_encrypted_key`].
pub const KEY_PASSWORD: &str = "s3cret-pass";

impl TestCerts {
    /// Options for what a cold request crosses (issue 24's measurements): a standalone
    /// TLS server that requires authentication, with the SCRAM-SHA-256 user `user`.
    pub fn scram_server_options(&self, user: &str, password: &str) -> crate::server::ServerOptions {
        crate::server::ServerOptions {
            auth: true,
            users: vec![crate::server::TestUser::scram(
                user,
                password,
                &["SCRAM-SHA-256"],
            )],
            standalone: true,
            ..self.server_options(false)
        }
    }

    /// Options for a TLS server presenting the generated server certificate; with
    /// `require_client_cert`, it also demands a client certificate signed by the CA.
    pub fn server_options(&self, require_client_cert: bool) -> crate::server::ServerOptions {
        crate::server::ServerOptions {
            tls: Some(crate::server::TlsFiles {
                cert: self.server_cert.clone(),
                key: self.server_key.clone(),
                ca: self.ca_pem.clone(),
                require_client_cert,
            }),
            ..Default::default()
        }
    }
}

impl TestCerts {
    /// Options for a server that requires authentication and a client certificate,
    /// with a MONGODB-X509 user for the generated client certificate.
    pub fn x509_server_options(&self) -> crate::server::ServerOptions {
        crate::server::ServerOptions {
            auth: true,
            users: vec![crate::server::TestUser::x509(CLIENT_SUBJECT)],
            ..self.server_options(true)
        }
    }

    /// The connection string that authenticates to `server` (started with
    /// [`x509_server_options`](Self::x509_server_options)) with the client certificate.
    pub fn x509_uri(&self, server: &crate::server::TestServer) -> String {
        format!(
            "{}&tlsCertificateKeyFile={}&authMechanism=MONGODB-X509",
            server.uri(),
            self.client_cert_and_key.display()
        )
    }
}

/// Generates fresh certificates into `dir` (created if missing).
pub fn generate(dir: &Path) -> Result<TestCerts, String> {
    generate_with_server_names(dir, &[])
}

/// [`generate`], the server certificate also valid for `names` (the Atlas-shaped
/// fixture's member names, which clients that resolve them check it against).
pub fn generate_with_server_names(dir: &Path, names: &[&str]) -> Result<TestCerts, String> {
    let fail = |e: rcgen::Error| format!("cannot generate test certificates: {e}");
    let (ca_cert, ca) = new_ca("anymongo test CA").map_err(fail)?;
    let (untrusted_cert, _) = new_ca("anymongo untrusted CA").map_err(fail)?;

    let server_key = KeyPair::generate().map_err(fail)?;
    let mut server_names = vec!["localhost", "127.0.0.1", "::1"];
    server_names.extend_from_slice(names);
    let server_cert = leaf_params(
        &server_names,
        &[(DnType::CommonName, "localhost")],
        ExtendedKeyUsagePurpose::ServerAuth,
    )
    .and_then(|params| params.signed_by(&server_key, &ca))
    .map_err(fail)?;

    let client_key = KeyPair::generate().map_err(fail)?;
    let client_cert = leaf_params(
        &[],
        &[
            (DnType::OrganizationName, "anymongo"),
            (DnType::OrganizationalUnitName, "tests"),
            (DnType::CommonName, "client"),
        ],
        ExtendedKeyUsagePurpose::ClientAuth,
    )
    .and_then(|params| params.signed_by(&client_key, &ca))
    .map_err(fail)?;

    let write = pem_writer(dir)?;
    Ok(TestCerts {
        dir: dir.to_owned(),
        ca_pem: write("ca.pem", ca_cert.pem())?,
        server_cert: write("server.pem", server_cert.pem())?,
        server_key: write("server.key", server_key.serialize_pem())?,
        untrusted_ca_pem: write("untrusted-ca.pem", untrusted_cert.pem())?,
        client_cert_and_key: write(
            "client.pem",
            client_cert.pem() + &client_key.serialize_pem(),
        )?,
        client_cert_and_encrypted_key: write(
            "client-encrypted.pem",
            client_cert.pem() + &encrypt_pkcs8(&client_key.serialize_der(), KEY_PASSWORD)?,
        )?,
    })
}

/// Server certificates that each fail verification in one way, signed by a CA of
/// their own: written by [`generate_flawed`].
#[derive(Clone, Debug)]
pub struct FlawedCerts {
    /// The CA that signed every certificate here.
    pub ca_pem: PathBuf,
    /// The private key of every server certificate here.
    pub server_key: PathBuf,
    /// A server certificate for `wrong.example.com` only: valid but for another host.
    pub wrong_host_cert: PathBuf,
    /// A server certificate for `localhost` and `127.0.0.1` that expired in 2001.
    pub expired_cert: PathBuf,
}

impl FlawedCerts {
    /// Options for a TLS server presenting `cert` (one of the flawed certificates)
    /// with the shared key.
    pub fn server_options(&self, cert: &Path) -> crate::server::ServerOptions {
        crate::server::ServerOptions {
            tls: Some(crate::server::TlsFiles {
                cert: cert.to_owned(),
                key: self.server_key.clone(),
                ca: self.ca_pem.clone(),
                require_client_cert: false,
            }),
            ..Default::default()
        }
    }
}

/// Generates [`FlawedCerts`] into `dir` (created if missing).
pub fn generate_flawed(dir: &Path) -> Result<FlawedCerts, String> {
    let fail = |e: rcgen::Error| format!("cannot generate test certificates: {e}");
    let (ca_cert, ca) = new_ca("anymongo flawed-certificates CA").map_err(fail)?;
    let server_key = KeyPair::generate().map_err(fail)?;
    let wrong_host = leaf_params(
        &["wrong.example.com"],
        &[(DnType::CommonName, "wrong.example.com")],
        ExtendedKeyUsagePurpose::ServerAuth,
    )
    .and_then(|params| params.signed_by(&server_key, &ca))
    .map_err(fail)?;
    let expired = leaf_params(
        &["localhost", "127.0.0.1"],
        &[(DnType::CommonName, "localhost")],
        ExtendedKeyUsagePurpose::ServerAuth,
    )
    .and_then(|mut params| {
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        params.signed_by(&server_key, &ca)
    })
    .map_err(fail)?;

    let write = pem_writer(dir)?;
    Ok(FlawedCerts {
        ca_pem: write("flawed-ca.pem", ca_cert.pem())?,
        server_key: write("flawed-server.key", server_key.serialize_pem())?,
        wrong_host_cert: write("wrong-host.pem", wrong_host.pem())?,
        expired_cert: write("expired.pem", expired.pem())?,
    })
}

/// The PKCS#8 key `der` encrypted with `password`, as an `ENCRYPTED PRIVATE KEY` PEM
/// (PBES2 with PBKDF2-SHA256 and AES-256-CBC, as `openssl pkcs8 -topk8` writes it).
fn encrypt_pkcs8(der: &[u8], password: &str) -> Result<String, String> {
    use pkcs8::der::pem::LineEnding;
    let fail = |e: pkcs8::Error| format!("cannot encrypt the test key: {e}");
    let info = pkcs8::PrivateKeyInfo::try_from(der).map_err(fail)?;
    // Fixed salt and IV: a test key, and no random number generator needed.
    let params = pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(2048, &[7; 16], &[9; 16])
        .map_err(|e| format!("cannot encrypt the test key: {e}"))?;
    let encrypted = info.encrypt_with_params(params, password).map_err(fail)?;
    encrypted
        .to_pem("ENCRYPTED PRIVATE KEY", LineEnding::LF)
        .map(|pem| pem.to_string())
        .map_err(|e| format!("cannot encode the test key: {e}"))
}

/// A self-signed CA named `name`, with the issuer that signs with it.
pub(crate) fn new_ca(
    name: &str,
) -> Result<(rcgen::Certificate, Issuer<'static, KeyPair>), rcgen::Error> {
    new_ca_with_key(name, KeyPair::generate()?)
}

/// [`new_ca`] with the key `key`.
pub(crate) fn new_ca_with_key(
    name: &str,
    key: KeyPair,
) -> Result<(rcgen::Certificate, Issuer<'static, KeyPair>), rcgen::Error> {
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let cert = params.self_signed(&key)?;
    Ok((cert, Issuer::new(params, key)))
}

/// The parameters of an end-entity certificate.
pub(crate) fn leaf_params(
    names: &[&str],
    subject: &[(DnType, &str)],
    purpose: ExtendedKeyUsagePurpose,
) -> Result<CertificateParams, rcgen::Error> {
    let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
    let mut params = CertificateParams::new(names)?;
    params.distinguished_name = DistinguishedName::new();
    for (kind, value) in subject {
        params.distinguished_name.push(kind.clone(), *value);
    }
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![purpose];
    params.use_authority_key_identifier_extension = true;
    Ok(params)
}

/// Creates `dir`, and returns what writes a PEM text into a file of it and gives its path.
pub(crate) fn pem_writer(
    dir: &Path,
) -> Result<impl Fn(&str, String) -> Result<PathBuf, String> + '_, String> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(move |name: &str, pem: String| {
        let path = dir.join(name);
        fs::write(&path, pem).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(path)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{ServerOptions, TestServer, TlsFiles};
    use crate::setup;
    use std::process::Command;

    /// Pings `uri` with pymongo (installed with SecantusDB), optionally presenting a
    /// client certificate.
    fn pymongo_ping(uri: &str, client: Option<&Path>) -> Result<(), String> {
        const PING: &str = "import sys, pymongo\n\
            extra = {'tlsCertificateKeyFile': sys.argv[2]} if len(sys.argv) > 2 else {}\n\
            pymongo.MongoClient(sys.argv[1], serverSelectionTimeoutMS=3000, **extra)\
            .admin.command('ping')";
        let output = Command::new(setup::cache_dir().join("venv/bin/python"))
            .args(["-c", PING, uri])
            .args(client)
            .output()
            .map_err(|e| e.to_string())?;
        if output.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).into_owned())
        }
    }

    #[test]
    fn secantus_serves_mutual_tls_with_these_certificates() {
        let dir = tempfile::tempdir().unwrap();
        let certs = generate(dir.path()).unwrap();
        let server = TestServer::start(&ServerOptions {
            tls: Some(TlsFiles {
                cert: certs.server_cert.clone(),
                key: certs.server_key.clone(),
                ca: certs.ca_pem.clone(),
                require_client_cert: true,
            }),
            ..Default::default()
        })
        .unwrap();
        let port = server.port;
        let client = Some(certs.client_cert_and_key.as_path());

        let uri = server.uri() + "&directConnection=true";
        assert!(uri.contains("tls=true&tlsCAFile="), "{uri}");
        pymongo_ping(&uri, client).unwrap();
        let by_name = format!(
            "mongodb://localhost:{port}/?tls=true&directConnection=true&tlsCAFile={}",
            certs.ca_pem.display()
        );
        pymongo_ping(&by_name, client).unwrap();

        pymongo_ping(&uri, None).expect_err("a client without a certificate got in");
        let untrusted = format!(
            "mongodb://127.0.0.1:{port}/?tls=true&directConnection=true&tlsCAFile={}",
            certs.untrusted_ca_pem.display()
        );
        pymongo_ping(&untrusted, client).expect_err("the untrusted CA was accepted");
    }
}
