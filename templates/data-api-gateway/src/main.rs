//! The Data API gateway as a `wasi:http` incoming-handler component (wasm32-wasip2),
//! served by `wasmtime serve`: the runtime around the crate's core
//! ([`data_api_gateway::Gateway`]).
//!
//! Configuration, from the environment:
//! - `MONGODB_URI`: the connection string (`mongodb+srv://` too);
//! - `DATA_API_CONFIG`: the JSON of [`data_api_gateway::Config`] (the API keys, their
//!   allow-lists, the bounds).
//!
//! ```sh
//! cargo build -p data-api-gateway --target wasm32-wasip2
//! wasmtime serve -S cli -S inherit-network=y --addr 127.0.0.1:8080 \
//!     --env MONGODB_URI=mongodb://127.0.0.1:27017 \
//!     --env 'DATA_API_CONFIG={"apiKeys":[{"key":"change-me"}]}' \
//!     target/wasm32-wasip2/debug/data-api-gateway.wasm
//! ```
//!
//! `wasmtime serve` runs each request in a fresh instance: each reads its
//! configuration and makes its client (and connection) anew, so every request is a
//! cold one: five round trips to a TLS deployment with SCRAM-SHA-256, measured by
//! `tests/tests/data_api_gateway.rs` (docs/guide/edge.md, on the cold request).

#[cfg(target_os = "wasi")]
mod serve {
    use data_api_gateway::{Config, Gateway, Request, Response};
    use wstd::http::body::util::{BodyExt, Limited};
    use wstd::http::{Body, Error, HeaderName, HeaderValue, StatusCode};

    /// Answers one request; every failure is a Data API error body.
    pub async fn serve(request: wstd::http::Request<Body>) -> wstd::http::Response<Body> {
        let config = std::env::var("DATA_API_CONFIG").unwrap_or_default();
        let config = match Config::from_json(&config) {
            Ok(config) => config,
            Err(error) => {
                return into_wasi(Gateway::misconfigured(format!("DATA_API_CONFIG: {error}")))
            }
        };
        let gateway = Gateway::new(config);
        let uri = std::env::var("MONGODB_URI").unwrap_or_default();
        let (parts, body) = request.into_parts();
        if body
            .content_length()
            .is_some_and(|length| length > gateway.max_body_bytes() as u64)
        {
            return into_wasi(gateway.body_too_large());
        }
        // The body's bytes, no more than the limit allows, however the client sends it.
        let body = match Limited::new(body.into_boxed_body(), gateway.max_body_bytes())
            .collect()
            .await
        {
            Ok(collected) => collected.to_bytes().to_vec(),
            Err(_) => return into_wasi(gateway.body_too_large()),
        };
        let request = Request {
            method: parts.method.as_str().to_owned(),
            path: parts.uri.path().to_owned(),
            headers: parts
                .headers
                .iter()
                .filter_map(|(name, value)| {
                    Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
                })
                .collect(),
            body,
        };
        if uri.is_empty() {
            return into_wasi(Gateway::misconfigured("MONGODB_URI is not set"));
        }
        into_wasi(gateway.handle(&request, || gateway.connect(&uri)).await)
    }

    fn into_wasi(response: Response) -> wstd::http::Response<Body> {
        let mut wasi = wstd::http::Response::new(Body::from(response.body));
        *wasi.status_mut() =
            StatusCode::from_u16(response.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        wasi.headers_mut().insert(
            HeaderName::from_static("content-type"),
            HeaderValue::from_static(response.content_type),
        );
        wasi
    }

    /// The handler's signature, as `wstd::http_server` wants it.
    pub type Outcome = Result<wstd::http::Response<Body>, Error>;
}

#[cfg(target_os = "wasi")]
#[wstd::http_server]
async fn main(request: wstd::http::Request<wstd::http::Body>) -> serve::Outcome {
    Ok(serve::serve(request).await)
}

#[cfg(not(target_os = "wasi"))]
fn main() {
    eprintln!(
        "data-api-gateway is a wasi:http component: build it with \
         `cargo build -p data-api-gateway --target wasm32-wasip2` and serve it with \
         `wasmtime serve -S cli -S inherit-network=y`"
    );
    std::process::exit(2);
}
