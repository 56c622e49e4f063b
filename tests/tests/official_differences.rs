//! Differences from the official `mongodb` crate's 3.x API that were closed: code
//! written from its documentation, with only `mongodb` replaced by `anymongo`,
//! compiles (the annotations name the official types) and behaves as documented
//! against the tests' SecantusDB.

use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::{Client, ClientSession, ClusterTime};
use anymongo_tests::{harness, server};

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

/// `ClientSession::cluster_time(&self) -> Option<&ClusterTime>`: a borrow, which stays
/// as it was while the session's cluster time advances.
#[tokio::test]
async fn a_session_lends_its_cluster_time() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let coll = client
            .database("official_differences")
            .collection::<Document>("cluster_time");
        let mut session: ClientSession = client.start_session().await?;
        assert!(session.cluster_time().is_none());
        coll.insert_one(doc! { "x": 1 })
            .session(&mut session)
            .await?;
        let first: Option<&ClusterTime> = session.cluster_time();
        let first = first.expect("a replica set gossips the cluster time");
        let kept = first.clone();
        // Another operation of the session (a shared borrow, an addition) advances its
        // cluster time while `first` is borrowed: `first` does not change.
        coll.insert_one(doc! { "x": 2 }).session(&session).await?;
        let second = session.cluster_time().expect("still there");
        assert_eq!(*first, kept);
        assert!(second.timestamp() >= first.timestamp());
        // The official way to carry it over: `advance_cluster_time(&ClusterTime)`.
        // `mut` as the official `advance_cluster_time(&mut self, …)` needs; anymongo's
        // takes `&self`.
        #[allow(unused_mut)]
        let mut other = client.start_session().await?;
        other.advance_cluster_time(second);
        assert_eq!(other.cluster_time(), Some(second));
        // A mutable borrow again (every operation given `&mut session`).
        let latest = session.cluster_time().cloned();
        coll.find_one(doc! {}).session(&mut session).await?;
        assert!(
            session.cluster_time().map(ClusterTime::timestamp) >= latest.map(|t| t.timestamp())
        );
        Ok(())
    })
    .await
}
