//! The addresses a client knows its servers' host names have, so that a name is looked
//! up once per TTL rather than once per connection (issue 44: a cold request on a
//! `mongodb+srv` deployment asked each member's name for its monitor, then again for
//! the operation's connection).
//!
//! One book per client, shared by all its connections — monitoring and pooled, on
//! every target. It learns addresses from the SRV answers' glue (the A and AAAA records
//! of their Additional section, [`SrvRecord::addresses`](crate::rt::SrvRecord)) and from
//! the look-ups it makes itself through the runtime's [`Resolver::addresses`] before a
//! connection to a name it has no fresh addresses of; each is reused for its TTL. The
//! transport is given them ([`ConnectTarget::addresses`](crate::rt::ConnectTarget)) and
//! connects to them instead of resolving the name.
//!
//! What it cannot learn it leaves to the transport, as before: a name whose look-up
//! fails or finds nothing (the transport's own resolution then gives its own error), a
//! look-up without TTL (a system resolver's, which caches by itself), a resolver that
//! cannot look addresses up (a JavaScript host's).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::rt::{Clock, HostAddresses, Instant, IpAddr, Resolver};
use crate::signal::lock;

/// A client's known addresses (see the module documentation).
pub(crate) struct AddressBook {
    resolver: Arc<dyn Resolver>,
    clock: Arc<dyn Clock>,
    /// Lower-cased host name → its addresses and until when they may be used.
    known: Mutex<HashMap<String, (Vec<IpAddr>, Instant)>>,
}

impl std::fmt::Debug for AddressBook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddressBook")
            .field("known", &*lock(&self.known))
            .finish_non_exhaustive()
    }
}

impl AddressBook {
    /// An empty book that looks names up with `resolver` and reckons TTLs on `clock`.
    pub(crate) fn new(resolver: Arc<dyn Resolver>, clock: Arc<dyn Clock>) -> AddressBook {
        AddressBook {
            resolver,
            clock,
            known: Mutex::default(),
        }
    }

    /// Keeps `addresses` of `host` for their TTL from now (nothing without a TTL).
    pub(crate) fn learn(&self, host: &str, addresses: &HostAddresses) {
        if addresses.ips.is_empty() || addresses.ttl_secs == 0 {
            return;
        }
        let until = self.clock.now() + Duration::from_secs(addresses.ttl_secs.into());
        lock(&self.known).insert(host.to_ascii_lowercase(), (addresses.ips.clone(), until));
    }

    /// Forgets what is known of `host`: a connection to its addresses failed, so the
    /// next one asks again rather than trust them for the rest of their TTL.
    pub(crate) fn forget(&self, host: &str) {
        lock(&self.known).remove(&host.to_ascii_lowercase());
    }

    /// The addresses a connection to `host` (a name, not an IP literal or a socket
    /// path) should use: the known ones while fresh, else the resolver's (kept for
    /// their TTL). Empty when there is nothing to give: the transport resolves `host`
    /// itself.
    pub(crate) async fn addresses_of(&self, host: &str) -> Vec<IpAddr> {
        let key = host.to_ascii_lowercase();
        let now = self.clock.now();
        {
            let mut known = lock(&self.known);
            match known.get(&key) {
                Some((ips, until)) if now < *until => return ips.clone(),
                Some(_) => {
                    known.remove(&key);
                }
                None => {}
            }
        }
        match self.resolver.addresses(host).await {
            Ok(found) => {
                self.learn(host, &found);
                found.ips
            }
            Err(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::rt::{boxed, BoxFuture, SrvRecord};

    /// Answers every name with 10.0.0.1 for `ttl` seconds, counting the look-ups.
    struct Counting {
        ttl_secs: u32,
        asked: AtomicUsize,
    }

    impl Resolver for Counting {
        fn srv<'a>(&'a self, _: &'a str) -> BoxFuture<'a, io::Result<Vec<SrvRecord>>> {
            boxed(async { Ok(Vec::new()) })
        }
        fn txt<'a>(&'a self, _: &'a str) -> BoxFuture<'a, io::Result<Vec<String>>> {
            boxed(async { Ok(Vec::new()) })
        }
        fn ip<'a>(&'a self, _: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
            boxed(async { Err(io::Error::other("not asked")) })
        }
        fn addresses<'a>(&'a self, _: &'a str) -> BoxFuture<'a, io::Result<HostAddresses>> {
            self.asked.fetch_add(1, Ordering::SeqCst);
            let ttl_secs = self.ttl_secs;
            boxed(async move {
                Ok(HostAddresses {
                    ips: vec![[10, 0, 0, 1].into()],
                    ttl_secs,
                })
            })
        }
    }

    /// A clock whose time is set by the test.
    #[derive(Default)]
    struct SetClock(Mutex<Duration>);

    impl Clock for SetClock {
        fn now(&self) -> Instant {
            Instant::from_origin(*lock(&self.0))
        }
        fn unix_time(&self) -> Duration {
            Duration::ZERO
        }
        fn sleep(&self, _: Duration) -> BoxFuture<'static, ()> {
            boxed(async {})
        }
    }

    fn book(ttl_secs: u32) -> (AddressBook, Arc<Counting>, Arc<SetClock>) {
        let resolver = Arc::new(Counting {
            ttl_secs,
            asked: AtomicUsize::new(0),
        });
        let clock = Arc::new(SetClock::default());
        (
            AddressBook::new(resolver.clone(), clock.clone()),
            resolver,
            clock,
        )
    }

    #[test]
    fn a_name_is_looked_up_once_per_ttl() {
        let (book, resolver, clock) = book(60);
        let ip: IpAddr = [10, 0, 0, 1].into();
        let first = futures::executor::block_on(book.addresses_of("Db0.example.com"));
        let again = futures::executor::block_on(book.addresses_of("db0.example.com"));
        assert_eq!((first, again), (vec![ip], vec![ip]));
        assert_eq!(resolver.asked.load(Ordering::SeqCst), 1);
        *lock(&clock.0) = Duration::from_secs(60);
        futures::executor::block_on(book.addresses_of("db0.example.com"));
        assert_eq!(resolver.asked.load(Ordering::SeqCst), 2, "expired");
        book.forget("db0.example.com");
        futures::executor::block_on(book.addresses_of("db0.example.com"));
        assert_eq!(resolver.asked.load(Ordering::SeqCst), 3, "forgotten");
    }

    #[test]
    fn glue_spares_the_look_up_and_no_ttl_is_not_kept() {
        let (book, resolver, _) = book(0);
        let glue = HostAddresses {
            ips: vec![[10, 0, 0, 9].into()],
            ttl_secs: 30,
        };
        book.learn("db1.example.com", &glue);
        let found = futures::executor::block_on(book.addresses_of("db1.example.com"));
        assert_eq!(found, glue.ips);
        assert_eq!(resolver.asked.load(Ordering::SeqCst), 0);
        // A look-up without TTL is used once, not kept.
        futures::executor::block_on(book.addresses_of("db2.example.com"));
        futures::executor::block_on(book.addresses_of("db2.example.com"));
        assert_eq!(resolver.asked.load(Ordering::SeqCst), 2);
    }
}
