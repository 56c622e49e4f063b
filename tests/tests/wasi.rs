//! The wasm32-wasip2 build of the same core, run under wasmtime against the same
//! SecantusDB server, checked by the harness: the WASI demo pings, inserts and reads
//! back, and a native client then verifies what it wrote.

use std::path::PathBuf;
use std::process::Command;

use anymongo::bson::doc;
use anymongo_tests::{demo, server, setup};

/// Builds the WASI demo (a no-op when `./run.sh test` already did) and returns its path.
fn build_wasi_demo() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(setup::workspace_root())
        .args([
            "build",
            "-p",
            "anymongo-tests",
            "--bin",
            "demo",
            "--target",
            "wasm32-wasip2",
        ])
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the wasip2 demo failed");
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| setup::workspace_root().join("target"));
    target_dir.join("wasm32-wasip2/debug/demo.wasm")
}

#[tokio::test]
async fn wasi_build_pings_inserts_and_finds_against_the_same_server() {
    let wasm = build_wasi_demo();
    let wasmtime = setup::cache_dir().join("venv/bin/wasmtime");
    if !wasmtime.exists() {
        setup::run("venv").unwrap();
    }
    let uri = server::shared().uri();
    let collection = "from_wasi";
    let output = Command::new(&wasmtime)
        .args([
            "run",
            "-S",
            "inherit-network=y",
            "-S",
            "allow-ip-name-lookup=y",
        ])
        .arg(&wasm)
        .args([uri.as_str(), collection])
        .output()
        .expect("wasmtime runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "WASI demo failed: {stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("connected from wasi: wire version"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "inserted 3 documents into {}.{collection}",
            demo::DATABASE
        )),
        "{stdout}"
    );
    assert!(stdout.contains("read back 3 documents"), "{stdout}");

    // What the WASI build wrote is really on the server.
    let client = anymongo_native::client(&uri).unwrap();
    let found = client
        .database(demo::DATABASE)
        .run_command(
            doc! { "find": collection, "filter": { "runtime": "wasi" }, "sort": { "_id": 1 } },
        )
        .await
        .unwrap();
    let batch = found
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let names: Vec<&str> = batch
        .iter()
        .map(|d| d.as_document().unwrap().get_str("name").unwrap())
        .collect();
    assert_eq!(names, ["apple", "banana", "cherry"]);
}
