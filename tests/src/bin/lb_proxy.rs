//! `lb_proxy` runs the test harness's load balancer ([`anymongo_tests::lb_proxy`]) in
//! front of a server, for tests outside Rust: the npm package's unified-format runner
//! runs the `load_balancer` suite behind it, as the Rust runner does.
//!
//! `lb_proxy HOST:PORT SERVICES` listens on a free loopback port, hands out SERVICES
//! serviceIds round-robin, prints `mongodb://127.0.0.1:PORT/?loadBalanced=true` once
//! it serves, then runs until its standard input ends, so that it stops with the
//! process that started it, whichever way that one ends.

use std::io::Read;

use anymongo_tests::lb_proxy::LoadBalancerProxy;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(server), services) = (args.next(), args.next()) else {
        eprintln!("usage: lb_proxy HOST:PORT [SERVICES]");
        std::process::exit(2);
    };
    let services = match services.map(|services| services.parse::<usize>()) {
        None => 1,
        Some(Ok(services)) if services > 0 => services,
        Some(_) => {
            eprintln!("lb_proxy: SERVICES must be a positive number");
            std::process::exit(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("lb_proxy: cannot start tokio: {error}");
            std::process::exit(1);
        }
    };
    let proxy = match runtime.block_on(LoadBalancerProxy::start(&server, services)) {
        Ok(proxy) => proxy,
        Err(error) => {
            eprintln!("lb_proxy: cannot listen: {error}");
            std::process::exit(1);
        }
    };
    println!("{}", proxy.uri());
    // Blocks until the parent closes the pipe (or exits); the bytes are ignored.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    runtime.block_on(async move { drop(proxy) });
}
