//! `dns_server` serves the records of the Initial DNS Seedlist Discovery spec's tests
//! README ([`anymongo_tests::dns::spec_records`], the `localhost…` names at 127.0.0.1)
//! on a free loopback port, over UDP and TCP, for tests outside Rust: the npm package's
//! node:test suite resolves `mongodb+srv://` URIs through `node:dns` against it.
//!
//! It prints `listening on 127.0.0.1:PORT` once it serves, then runs until its standard
//! input ends, so that it stops with the process that started it, whichever way that
//! one ends.

use std::io::Read;
use std::net::Ipv4Addr;

use anymongo_tests::dns::{spec_records, DnsServer};

fn main() {
    let server = match DnsServer::start() {
        Ok(server) => server,
        Err(error) => {
            eprintln!("dns_server: cannot start: {error}");
            std::process::exit(1);
        }
    };
    server.load(spec_records(Ipv4Addr::LOCALHOST.into()));
    println!("listening on {}", server.address());
    // Blocks until the parent closes the pipe (or exits); the bytes are ignored.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}
