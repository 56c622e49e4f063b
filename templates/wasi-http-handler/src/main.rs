//! A template for a WASI edge function: a `wasi:http` incoming-handler component
//! (wasm32-wasip2) that stores and serves JSON items in MongoDB through `anymongo`
//! (its built-in wasi:sockets transport on this target).
//!
//! - `GET /items/:id` — the item whose `_id` is `:id` (an ObjectId's 24 hex digits, or a
//!   string, percent-encoded), as relaxed Extended JSON; 404 when there is none.
//! - `POST /items` with a JSON object (Extended JSON accepted) — inserts it; 201 with
//!   `{"insertedId": …}` and a `Location` header.
//!
//! Every failure is a status code with a body `{"error": "…"}`: 400 for a body that
//! is not a JSON object, 404 and 405 for unknown routes and methods, 409 for a
//! duplicate `_id`, 503 when no MongoDB server answers within
//! `serverSelectionTimeoutMS`, 500 when `MONGODB_URI` is missing or invalid.
//!
//! Configuration: `MONGODB_URI`, the connection string (`mongodb+srv://` too). The
//! items live in the collection `items` of the URI's database (`/name` in the path),
//! or of `edge` when it names none.
//!
//! Build and serve (the README's WASI quick start, run by `tests/tests/readme.rs`):
//!
//! ```sh
//! cargo build -p wasi-http-handler --target wasm32-wasip2
//! wasmtime serve -S cli -S inherit-network=y --env MONGODB_URI=mongodb://127.0.0.1:27017 \
//!     target/wasm32-wasip2/debug/wasi-http-handler.wasm
//! ```
//!
//! On other targets the crate builds a program that only says it is a WASI component.

#[cfg(target_os = "wasi")]
mod handler;

#[cfg(target_os = "wasi")]
#[wstd::http_server]
async fn main(
    request: wstd::http::Request<wstd::http::Body>,
) -> Result<wstd::http::Response<wstd::http::Body>, wstd::http::Error> {
    Ok(handler::handle(request).await)
}

#[cfg(not(target_os = "wasi"))]
fn main() {
    eprintln!(
        "wasi-http-handler is a wasi:http component: build it with \
         `cargo build -p wasi-http-handler --target wasm32-wasip2` and serve it with \
         `wasmtime serve -S cli -S inherit-network=y`"
    );
    std::process::exit(2);
}
