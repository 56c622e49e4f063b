//! The anymongo demo: insert a few documents, read them back, print what it did.
//!
//! Natively: `demo [URI]` (or `MONGODB_URI`) runs the demo against that deployment; with
//! neither, it starts a local SecantusDB test server itself. It then runs the same demo
//! again as a WASI 0.2 program under wasmtime, and from the npm package under Node.js
//! (`wasm-demo/demo.js`), against the same server (skip both with `--native-only`).
//!
//! Under WASI (`wasmtime run -S inherit-network=y -S allow-ip-name-lookup=y demo.wasm URI
//! [COLLECTION]`): runs the demo once.
//!
//! Exits 0 on success; otherwise prints one line saying why and exits 1.

#[cfg(not(target_os = "wasi"))]
fn main() {
    if let Err(reason) = native::main() {
        eprintln!("demo failed: {reason}");
        std::process::exit(1);
    }
}

#[cfg(target_os = "wasi")]
fn main() {
    let mut args = std::env::args().skip(1);
    let uri = args
        .next()
        .or_else(|| std::env::var("MONGODB_URI").ok())
        .unwrap_or_else(|| "mongodb://127.0.0.1:27017".to_string());
    let collection = args.next().unwrap_or_else(|| "wasi".to_string());
    let outcome = anymongo_wasi::block_on(async {
        let client = anymongo::Client::with_uri_str(&uri).await?;
        anymongo_tests::demo::run(&client, &collection, "wasi").await
    });
    match outcome {
        Ok(report) => report.iter().for_each(|line| println!("{line}")),
        Err(error) => {
            eprintln!("demo failed: {error}");
            std::process::exit(1);
        }
    }
}

#[cfg(not(target_os = "wasi"))]
mod native {
    use std::path::PathBuf;
    use std::process::Command;

    use anymongo_tests::{demo, server::TestServer, setup};

    pub fn main() -> Result<(), String> {
        let mut native_only = false;
        let mut uri = None;
        for arg in std::env::args().skip(1) {
            match arg.as_str() {
                "--native-only" => native_only = true,
                "-h" | "--help" => {
                    println!("usage: demo [--native-only] [MONGODB_URI]");
                    return Ok(());
                }
                _ if uri.is_none() => uri = Some(arg),
                _ => return Err(format!("unexpected argument '{arg}'")),
            }
        }
        let uri = uri.or_else(|| std::env::var("MONGODB_URI").ok().filter(|u| !u.is_empty()));
        // With no URI, the embedded default: a local test server, stopped on exit.
        let (uri, _server) = match uri {
            Some(uri) => (uri, None),
            None => {
                println!("no URI given: starting a local SecantusDB test server");
                let server = TestServer::start(&Default::default())?;
                (server.uri(), Some(server))
            }
        };
        println!("== native (tokio) against {uri}");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start tokio: {e}"))?;
        let report = runtime.block_on(async {
            let client = anymongo::Client::with_uri_str(&uri).await?;
            demo::run(&client, "native", "native").await
        });
        report
            .map_err(|e| e.to_string())?
            .iter()
            .for_each(|line| println!("{line}"));

        if native_only {
            return Ok(());
        }
        println!("== wasm32-wasip2 under wasmtime against {uri}");
        let wasm = wasi_demo_path()?;
        let status = Command::new(wasmtime()?)
            .args([
                "run",
                "-S",
                "inherit-network=y",
                "-S",
                "allow-ip-name-lookup=y",
            ])
            .arg(&wasm)
            .args([uri.as_str(), "wasi"])
            .status()
            .map_err(|e| format!("cannot run wasmtime: {e}"))?;
        if !status.success() {
            return Err(format!("the WASI demo failed ({status})"));
        }

        println!("== npm package (wasm32-unknown-unknown) under Node.js against {uri}");
        let script = npm_demo_path()?;
        let status = Command::new("node")
            .arg(&script)
            .args([uri.as_str(), "npm"])
            .status()
            .map_err(|e| format!("cannot run node (Node.js 20 or later must be on PATH): {e}"))?;
        if !status.success() {
            return Err(format!("the npm demo failed ({status})"));
        }
        Ok(())
    }

    /// `wasm-demo/demo.js`, once the npm package is built.
    fn npm_demo_path() -> Result<PathBuf, String> {
        let package = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../wasm-demo");
        let built = package.join("pkg/anymongo_wasm_bg.wasm");
        let installed = package.join("node_modules/bson");
        if built.exists() && installed.exists() {
            Ok(package.join("demo.js"))
        } else {
            Err(format!(
                "the npm package is not built in {}: run `bash wasm-demo/build.sh` and `npm ci` there (the README's demo command does)",
                package.display()
            ))
        }
    }

    /// The wasip2 build of this binary, next to this one in the target folder.
    fn wasi_demo_path() -> Result<PathBuf, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let profile_dir = exe.parent().ok_or("no folder")?;
        let profile = profile_dir.file_name().ok_or("no profile")?;
        let target_dir = profile_dir.parent().ok_or("no target folder")?;
        let wasm = target_dir
            .join("wasm32-wasip2")
            .join(profile)
            .join("demo.wasm");
        if wasm.exists() {
            Ok(wasm)
        } else {
            Err(format!(
                "{} is missing: build it with `cargo build -p anymongo-tests --bin demo --target wasm32-wasip2` (the README's demo command does)",
                wasm.display()
            ))
        }
    }

    fn wasmtime() -> Result<PathBuf, String> {
        let path = setup::cache_dir().join("venv/bin/wasmtime");
        if !path.exists() {
            setup::run("venv")?;
        }
        Ok(path)
    }
}
