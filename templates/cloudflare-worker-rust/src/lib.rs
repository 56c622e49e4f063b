//! A template: a Cloudflare Worker written in Rust (workers-rs) that serves JSON items
//! from MongoDB through anymongo, without the npm package:
//!
//! - `GET /items/:id`: the item whose `_id` is `:id` (an ObjectId's 24 hex digits, or a
//!   string, percent-encoded), as relaxed Extended JSON; 404 when there is none;
//! - `POST /items`: inserts the JSON object of the body (Extended JSON accepted); 201
//!   with `{"insertedId": ...}` and a `Location` header.
//!
//! Every failure is a status with a body `{"error": "..."}`: 400 bad input, 404/405
//! unknown route or method, 409 duplicate `_id`, 503 when no server answers within
//! `serverSelectionTimeoutMS`, 500 otherwise. Configured by the `MONGODB_URI` variable
//! (a secret); `DNS_OVER_HTTPS` may name another DNS-over-HTTPS endpoint (JSON API) for
//! `mongodb+srv://` names. The items live in the collection `items` of the connection
//! string's database, or of `edge` when it names none.
//!
//! The client lives in a Durable Object (`Items`), not in the Worker's module scope:
//! Workers refuse to use a socket opened by one request from another request, so a client
//! shared by the requests of an isolate fails on every request after the first. A
//! Durable Object's requests share its sockets: the first request connects, the later
//! ones reuse its connections. Built by `build.sh` (see README.md); on other targets the
//! crate is empty.

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod items;
