//! Fake connections for pools: the CMAP spec runner, the pool tests and the pool
//! benchmark measure the pool itself with them.

use anymongo::cmap::{Establish, Poolable};
use anymongo::rt::{boxed, BoxFuture};

/// Opens [`FakeConnection`]s: each takes one turn of the scheduler, as real I/O
/// would, and never fails.
#[derive(Debug, Default, Clone, Copy)]
pub struct FakeEstablish;

/// A connection that exists only in the pool's books; never broken.
#[derive(Debug)]
pub struct FakeConnection;

impl Poolable for FakeConnection {
    fn is_broken(&self) -> bool {
        false
    }
}

impl Establish for FakeEstablish {
    type Connection = FakeConnection;

    fn establish(&self, _connection_id: u32) -> BoxFuture<'_, anymongo::Result<FakeConnection>> {
        boxed(async {
            tokio::task::yield_now().await;
            Ok(FakeConnection)
        })
    }
}
