//! Runs [`anymongo_tests::probe`]: `topology URI STEP...` prints what each step did and
//! the topology after it. Natively it uses tokio (background monitoring); as a WASI 0.2
//! program under wasmtime (`-S inherit-network=y`) it has no spawner, so the client
//! monitors in single-threaded mode.

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(uri) = args.next() else {
        eprintln!("usage: topology URI [ping | stepdown | insert:ID]...");
        std::process::exit(2);
    };
    let steps: Vec<String> = args.collect();
    match run(&uri, &steps) {
        Ok(report) => report.iter().for_each(|line| println!("{line}")),
        Err(error) => {
            eprintln!("topology failed: {error}");
            std::process::exit(1);
        }
    }
}

#[cfg(target_os = "wasi")]
fn run(uri: &str, steps: &[String]) -> anymongo::Result<Vec<String>> {
    anymongo_wasi::block_on(async {
        let client = anymongo::Client::with_uri_str(uri).await?;
        Ok(anymongo_tests::probe::run(&client, steps).await)
    })
}

#[cfg(not(target_os = "wasi"))]
fn run(uri: &str, steps: &[String]) -> anymongo::Result<Vec<String>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio starts");
    runtime.block_on(async {
        let client = anymongo::Client::with_uri_str(uri).await?;
        Ok(anymongo_tests::probe::run(&client, steps).await)
    })
}
