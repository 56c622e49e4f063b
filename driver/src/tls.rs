//! TLS (rustls, `ring` provider) layered over any [`Stream`] — shared by the hosts
//! that bring their own TLS (native, WASI); JavaScript hosts use theirs.
//!
//! rustls is driven sans-IO: ciphertext read from the inner stream is fed to the
//! [`rustls::ClientConnection`], and whatever it wants to send is written out. No
//! file is read here: a host passes [`secure`] its way of reading `tlsCAFile` and
//! `tlsCertificateKeyFile`.

use std::io::{self, Read, Write};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};

use crate::rt::{boxed, BoxFuture, ConnectTarget, PemSource, Stream, TlsError};

/// Size of the buffer ciphertext is read into: one maximal TLS record and its overhead.
const READ_CHUNK: usize = 16 * 1024 + 512;

fn tls_error(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, TlsError(message.into()))
}

/// Returns `stream` as is when `target` asks for no TLS, and otherwise runs the TLS
/// handshake over it, trusting the authorities `target` names (a `tlsCAFile` is read
/// with the host's `read_file`) or the web roots.
pub async fn secure(
    stream: Box<dyn Stream>,
    target: &ConnectTarget,
    read_file: impl Fn(&str) -> io::Result<Vec<u8>>,
) -> io::Result<Box<dyn Stream>> {
    let Some(options) = &target.tls else {
        return Ok(stream);
    };
    if options.certificate_key_password.is_some() {
        return Err(tls_error(
            "encrypted client keys (tlsCertificateKeyFilePassword) are not supported yet",
        ));
    }
    let ca = read_pem(options.ca_pem.as_ref(), "tlsCAFile", &read_file)?;
    let identity = read_pem(
        options.certificate_key.as_ref(),
        "tlsCertificateKeyFile",
        &read_file,
    )?;
    let config = client_config(ca.as_deref(), identity.as_deref())?;
    connect(stream, &target.host, config).await
}

/// The PEM bytes `source` names, if any: a file is read with the host's `read_file`,
/// in-memory PEM is used as is. `option` names the URI option in errors.
fn read_pem(
    source: Option<&PemSource>,
    option: &str,
    read_file: &impl Fn(&str) -> io::Result<Vec<u8>>,
) -> io::Result<Option<Vec<u8>>> {
    match source {
        None => Ok(None),
        Some(PemSource::Pem(pem)) => Ok(Some(pem.as_bytes().to_vec())),
        Some(PemSource::File(path)) => read_file(path)
            .map(Some)
            .map_err(|error| io::Error::new(error.kind(), format!("{option} {path}: {error}"))),
    }
}

/// A client configuration trusting the PEM certificates in `ca_pem`, or the
/// Mozilla web roots when `None`, and presenting the certificate chain and private key
/// in `identity_pem` when given (mutual TLS, MONGODB-X509).
fn client_config(
    ca_pem: Option<&[u8]>,
    identity_pem: Option<&[u8]>,
) -> io::Result<Arc<ClientConfig>> {
    let mut roots = RootCertStore::empty();
    match ca_pem {
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        Some(pem) => {
            for certificate in CertificateDer::pem_slice_iter(pem) {
                let certificate = certificate
                    .map_err(|error| tls_error(format!("invalid CA certificate PEM: {error}")))?;
                roots
                    .add(certificate)
                    .map_err(|error| tls_error(format!("unusable CA certificate: {error}")))?;
            }
            if roots.is_empty() {
                return Err(tls_error("the CA file holds no certificate"));
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| tls_error(error.to_string()))?
        .with_root_certificates(roots);
    let config = match identity_pem {
        None => builder.with_no_client_auth(),
        Some(pem) => {
            let chain = CertificateDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| tls_error(format!("tlsCertificateKeyFile: {error}")))?;
            if chain.is_empty() {
                return Err(tls_error("tlsCertificateKeyFile holds no certificate"));
            }
            let key = PrivateKeyDer::from_pem_slice(pem).map_err(|error| {
                tls_error(format!(
                    "tlsCertificateKeyFile: no usable private key ({error})"
                ))
            })?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|error| tls_error(format!("tlsCertificateKeyFile: {error}")))?
        }
    };
    Ok(Arc::new(config))
}

/// Runs a TLS handshake with `server_name` over `inner` and returns the encrypted stream.
async fn connect(
    inner: Box<dyn Stream>,
    server_name: &str,
    config: Arc<ClientConfig>,
) -> io::Result<Box<dyn Stream>> {
    let name = ServerName::try_from(server_name.to_string())
        .map_err(|_| tls_error(format!("'{server_name}' is not a valid TLS server name")))?;
    let connection =
        ClientConnection::new(config, name).map_err(|error| tls_error(error.to_string()))?;
    let mut stream = TlsStream {
        inner,
        connection,
        incoming: vec![0; READ_CHUNK],
        outgoing: Vec::new(),
    };
    while stream.connection.is_handshaking() {
        if stream.connection.wants_write() {
            stream.send_pending().await?;
        } else if !stream.receive().await? {
            return Err(tls_error(
                "the server closed the connection during the TLS handshake",
            ));
        }
    }
    stream.send_pending().await?;
    Ok(Box::new(stream))
}

struct TlsStream {
    inner: Box<dyn Stream>,
    connection: ClientConnection,
    incoming: Vec<u8>,
    outgoing: Vec<u8>,
}

impl TlsStream {
    /// Reads ciphertext from the inner stream and processes it; `false` at end of stream.
    async fn receive(&mut self) -> io::Result<bool> {
        let n = self.inner.read(&mut self.incoming).await?;
        if n == 0 {
            // Tell rustls about the end of the stream so that it can tell a clean
            // close_notify from a truncation.
            self.connection.read_tls(&mut &[][..])?;
            return Ok(false);
        }
        let mut ciphertext = &self.incoming[..n];
        while !ciphertext.is_empty() {
            self.connection.read_tls(&mut ciphertext)?;
            if let Err(error) = self.connection.process_new_packets() {
                // Send the alert rustls queued before reporting the failure.
                let _ = self.send_pending().await;
                return Err(tls_error(error.to_string()));
            }
        }
        self.send_pending().await?;
        Ok(true)
    }

    /// Writes out every TLS record rustls has queued.
    async fn send_pending(&mut self) -> io::Result<()> {
        while self.connection.wants_write() {
            self.outgoing.clear();
            self.connection.write_tls(&mut self.outgoing)?;
            self.inner.write_all(&self.outgoing).await?;
        }
        Ok(())
    }
}

impl Stream for TlsStream {
    fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> BoxFuture<'a, io::Result<usize>> {
        boxed(async move {
            loop {
                match self.connection.reader().read(buf) {
                    Ok(n) => return Ok(n),
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                    Err(error) => return Err(error),
                }
                if !self.receive().await? {
                    // The reader now reports a clean close (Ok(0)) or a truncation.
                    return match self.connection.reader().read(buf) {
                        Err(error) if error.kind() == io::ErrorKind::WouldBlock => Ok(0),
                        other => other,
                    };
                }
            }
        })
    }

    fn write_all<'a>(&'a mut self, mut buf: &'a [u8]) -> BoxFuture<'a, io::Result<()>> {
        boxed(async move {
            while !buf.is_empty() {
                let n = self.connection.writer().write(buf)?;
                buf = &buf[n..];
                self.send_pending().await?;
            }
            Ok(())
        })
    }
}
