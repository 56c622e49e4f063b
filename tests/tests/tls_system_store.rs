//! Natively, TLS without `tlsCAFile` trusts the operating system's certificate store.
//! Here the store is the generated test CA: `rustls-native-certs` reads the file
//! `SSL_CERT_FILE` names instead of the system's bundle, and the native transport loads
//! the store once per process, on the first TLS connection — so the variable is set
//! before anything else runs, alone in this test binary. (That a CA outside the store is
//! refused is `native.rs`' `tls_without_a_ca_file_refuses_a_ca_outside_the_system_store`.)

use std::time::Duration;

use anymongo::bson::{doc, Bson};
use anymongo_tests::server::TestServer;
use anymongo_tests::{certs, harness};

#[test]
fn a_ca_in_the_system_store_is_trusted_without_tls_ca_file() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certs::generate(dir.path()).unwrap();
    // Set while no other thread runs: changing the environment is not thread-safe.
    std::env::set_var("SSL_CERT_FILE", &certs.ca_pem);
    std::env::remove_var("SSL_CERT_DIR");
    let server = TestServer::start(&certs.server_options(false)).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let uri = format!(
        "mongodb://localhost:{}/?tls=true&connectTimeoutMS=5000&serverSelectionTimeoutMS=5000",
        server.port
    );
    let reply = runtime.block_on(harness::within(Duration::from_secs(60), async {
        anymongo::Client::with_uri_str(&uri)
            .await
            .unwrap()
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .await
            .unwrap()
    }));
    assert_eq!(reply.get("ok"), Some(&Bson::Double(1.0)));
    let roots = anymongo_native::system_roots();
    assert!(roots.is_system());
    assert_eq!(roots.len(), 1, "the test CA alone");
}
