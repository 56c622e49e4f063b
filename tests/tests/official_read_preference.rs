//! Read preferences as the official `mongodb` crate's 3.x documentation writes them
//! (`options::{ReadPreference, ReadPreferenceOptions, SelectionCriteria}`, the
//! `selection_criteria` option of `ClientOptions` and of the read actions), with only
//! `mongodb` replaced by `anymongo`, run against the tests' SecantusDB (a
//! single-member replica set). Written here from the documentation, not copied.
//!
//! The one member is the primary, so what the read preference changes is observable
//! in two ways: the `$readPreference` each command carries (command monitoring), and
//! the selection decision (mode `secondary` finds no server; a predicate picks or
//! refuses the primary).

use std::sync::Arc;
use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::options::{ClientOptions, ReadPreference, ReadPreferenceOptions, SelectionCriteria};
use anymongo::{Client, ErrorKind, ServerInfo, ServerType};
use anymongo_tests::harness::{self, CommandLog};
use futures::TryStreamExt;

const TEST_BOUND: Duration = Duration::from_secs(30);

/// The `$readPreference` of the last `command_name` command sent.
fn sent_read_preference(events: &CommandLog, command_name: &str) -> Option<Document> {
    events
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find_map(|event| match event {
            anymongo::event::command::CommandEvent::Started(started)
                if started.command_name == command_name =>
            {
                Some(
                    started
                        .command
                        .get_document("$readPreference")
                        .ok()
                        .cloned(),
                )
            }
            _ => None,
        })
        .expect("the command was sent")
}

#[tokio::test]
async fn read_actions_take_selection_criteria() {
    harness::within(TEST_BOUND, async {
        let (client, events) = harness::recording_client("appName=official_read_preference");
        let coll = client
            .database("official_read_preference")
            .collection::<Document>("books");
        coll.drop().await.unwrap();
        coll.insert_one(doc! { "title": "1984" }).await.unwrap();

        // A read preference as the docs build one, given to find.
        let mut cursor = coll
            .find(doc! {})
            .selection_criteria(SelectionCriteria::ReadPreference(
                ReadPreference::SecondaryPreferred { options: None },
            ))
            .await
            .unwrap();
        let mut titles = Vec::new();
        while let Some(book) = cursor.try_next().await.unwrap() {
            titles.push(book.get_str("title").unwrap().to_owned());
        }
        assert_eq!(titles, ["1984"]);
        assert_eq!(
            sent_read_preference(&events, "find"),
            Some(doc! { "mode": "secondaryPreferred" })
        );

        // With options, through the builder and `.into()`.
        let nearest: SelectionCriteria = ReadPreference::Nearest {
            options: Some(
                ReadPreferenceOptions::builder()
                    .max_staleness(Duration::from_secs(120))
                    .build(),
            ),
        }
        .into();
        let count = coll
            .count_documents(doc! {})
            .selection_criteria(nearest.clone())
            .await
            .unwrap();
        assert_eq!(count, 1);
        assert_eq!(
            sent_read_preference(&events, "aggregate"),
            Some(doc! { "mode": "nearest", "maxStalenessSeconds": 120 })
        );

        // run_command reads from the primary unless told otherwise.
        let db = client.database("official_read_preference");
        db.run_command(doc! { "ping": 1 }).await.unwrap();
        assert_eq!(sent_read_preference(&events, "ping"), None);
        db.run_command(doc! { "ping": 1 })
            .selection_criteria(ReadPreference::PrimaryPreferred { options: None }.into())
            .await
            .unwrap();
        assert_eq!(
            sent_read_preference(&events, "ping"),
            Some(doc! { "mode": "primaryPreferred" })
        );
    })
    .await
}

#[tokio::test]
async fn the_client_default_comes_from_client_options() {
    harness::within(TEST_BOUND, async {
        let uri = anymongo_tests::server::shared().uri();
        let mut options = ClientOptions::parse(&uri).await.unwrap();
        assert_eq!(options.selection_criteria, None);
        options.selection_criteria =
            Some(ReadPreference::SecondaryPreferred { options: None }.into());
        let client = Client::with_options(options).unwrap();
        assert_eq!(
            client.selection_criteria(),
            Some(&SelectionCriteria::ReadPreference(
                ReadPreference::SecondaryPreferred { options: None }
            ))
        );
        let db = client.database("official_read_preference");
        let coll = db.collection::<Document>("inherited");
        assert_eq!(coll.selection_criteria(), client.selection_criteria());
        coll.insert_one(doc! { "x": 1 }).await.unwrap();
        // secondaryPreferred falls back to the primary, the only member.
        assert!(coll.find_one(doc! {}).await.unwrap().is_some());

        // A connection string sets it too.
        let options = ClientOptions::parse(format!(
            "{uri}{}readPreference=nearest&maxStalenessSeconds=120",
            if uri.contains('?') { "&" } else { "?" }
        ))
        .await
        .unwrap();
        let Some(SelectionCriteria::ReadPreference(ReadPreference::Nearest {
            options: Some(nearest),
        })) = &options.selection_criteria
        else {
            panic!("{:?}", options.selection_criteria);
        };
        assert_eq!(nearest.max_staleness, Some(Duration::from_secs(120)));
    })
    .await
}

#[tokio::test]
async fn selection_decides_by_mode_and_by_predicate() {
    harness::within(TEST_BOUND, async {
        let uri = anymongo_tests::server::shared().uri();
        let separator = if uri.contains('?') { "&" } else { "?" };
        let options = ClientOptions::parse(format!("{uri}{separator}serverSelectionTimeoutMS=500"))
            .await
            .unwrap();
        let client = Client::with_options(options).unwrap();
        let coll = client
            .database("official_read_preference")
            .collection::<Document>("selection");

        // No secondary in a one-member replica set: mode secondary finds no server.
        let error = coll
            .find_one(doc! {})
            .selection_criteria(ReadPreference::Secondary { options: None }.into())
            .await
            .unwrap_err();
        assert!(
            matches!(*error.kind, ErrorKind::ServerSelection { .. }),
            "{error}"
        );

        // A predicate over ServerInfo picks the primary ...
        let primary_only = SelectionCriteria::Predicate(Arc::new(|server: &ServerInfo| {
            server.server_type() == ServerType::RsPrimary
        }));
        coll.find_one(doc! {})
            .selection_criteria(primary_only)
            .await
            .unwrap();
        // ... and one that accepts nothing fails selection.
        let nothing = SelectionCriteria::Predicate(Arc::new(|_: &ServerInfo| false));
        let error = coll
            .find_one(doc! {})
            .selection_criteria(nothing)
            .await
            .unwrap_err();
        assert!(
            matches!(*error.kind, ErrorKind::ServerSelection { .. }),
            "{error}"
        );
    })
    .await
}
