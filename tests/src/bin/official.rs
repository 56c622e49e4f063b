//! The programs written from the official `mongodb` crate's documentation
//! ([`anymongo_tests::official`]), as a WASI 0.2 program:
//! `wasmtime run -S inherit-network=y -S allow-ip-name-lookup=y official.wasm URI`
//! runs each in turn against `URI` and prints `ok: NAME` after each; it stops at the
//! first failure, printing why, and exits 1.
//!
//! Natively the same programs run as the tests of `tests/official_api.rs`; this binary
//! is for wasm32-wasip2 only.

#[cfg(target_os = "wasi")]
fn main() {
    let Some(uri) = std::env::args().nth(1) else {
        eprintln!("usage: official.wasm URI");
        std::process::exit(2);
    };
    for (name, program) in anymongo_tests::official::PROGRAMS {
        if let Err(error) = anymongo_wasi::block_on(program(&uri)) {
            eprintln!("failed: {name}: {error}");
            std::process::exit(1);
        }
        println!("ok: {name}");
    }
}

#[cfg(not(target_os = "wasi"))]
fn main() {
    eprintln!(
        "the official binary runs under WASI; natively, run `cargo test --test official_api`"
    );
    std::process::exit(2);
}
