//! The rest of the official `mongodb` crate's 3.x surface, as its documentation shows
//! it: the GridFS find options and their setters, `RunCommandOptions`, the search
//! index options, `action::Action::optional`, `ChangeNamespaceType`, serializable
//! monitoring events and `ServerInfo::error()` as an `Error`. Written here from the
//! documentation, with only `mongodb` replaced by `anymongo`; each program checks what
//! it got, so that the test can fail.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anymongo::action::Action;
use anymongo::bson::{doc, Document};
use anymongo::change_stream::event::{ChangeNamespaceType, ChangeStreamEvent};
use anymongo::error::Error;
use anymongo::event::cmap::CmapEvent;
use anymongo::event::command::CommandEvent;
use anymongo::event::sdam::SdamEvent;
use anymongo::event::EventHandler;
use anymongo::options::{
    ClientOptions, ConnectionString, CreateSearchIndexOptions, DropSearchIndexOptions,
    GridFsFindOneOptions, GridFsFindOptions, HostInfo, ListSearchIndexOptions, ReadPreference,
    ResolverConfig, RunCommandOptions, SelectionCriteria, Socks5Proxy, UpdateSearchIndexOptions,
};
use anymongo::{Client, SearchIndexModel, ServerInfo};
use anymongo_tests::{harness, server};
use futures::io::AsyncWriteExt;
use futures::TryStreamExt;

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

#[tokio::test]
async fn gridfs_find_takes_the_gridfs_find_options() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let db = client.database("official_surface_gridfs");
        db.drop().await?;
        let bucket = db.gridfs_bucket(None);
        for name in ["a.txt", "b.txt", "c.txt"] {
            let mut upload = bucket.open_upload_stream(name).await?;
            upload.write_all(name.as_bytes()).await?;
            upload.close().await?;
        }

        let names = |files: Vec<anymongo::gridfs::FilesCollectionDocument>| {
            files
                .into_iter()
                .filter_map(|file| file.filename)
                .collect::<Vec<_>>()
        };
        // The setters ...
        let files = bucket
            .find(doc! {})
            .sort(doc! { "filename": -1 })
            .skip(1)
            .limit(1)
            .max_time(Duration::from_secs(5))
            .batch_size(2)
            .allow_disk_use(true)
            .await?
            .try_collect()
            .await?;
        assert_eq!(names(files), ["b.txt"]);
        // ... and the options struct.
        let options = GridFsFindOptions::builder()
            .sort(doc! { "filename": 1 })
            .limit(2)
            .build();
        let files = bucket
            .find(doc! {})
            .with_options(options)
            .await?
            .try_collect()
            .await?;
        assert_eq!(names(files), ["a.txt", "b.txt"]);

        let last = bucket
            .find_one(doc! {})
            .sort(doc! { "filename": -1 })
            .await?
            .and_then(|file| file.filename);
        assert_eq!(last.as_deref(), Some("c.txt"));
        let second = bucket
            .find_one(doc! {})
            .with_options(
                GridFsFindOneOptions::builder()
                    .sort(doc! { "filename": 1 })
                    .skip(1)
                    .max_time(Some(Duration::from_secs(5)))
                    .build(),
            )
            .await?
            .and_then(|file| file.filename);
        assert_eq!(second.as_deref(), Some("b.txt"));
        Ok(())
    })
    .await
}

#[tokio::test]
async fn run_command_takes_run_command_options() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let db = client.database("official_surface_run_command");
        let options = RunCommandOptions::builder()
            .selection_criteria(SelectionCriteria::ReadPreference(
                ReadPreference::PrimaryPreferred { options: None },
            ))
            .build();
        let reply = db
            .run_command(doc! { "ping": 1 })
            .with_options(options)
            .await?;
        assert_eq!(reply.get_f64("ok").ok(), Some(1.0), "{reply}");
        // A predicate that accepts no server: the option is used.
        let nowhere = SelectionCriteria::Predicate(Arc::new(|_: &ServerInfo| false));
        let options = ClientOptions::parse(format!(
            "{}{}serverSelectionTimeoutMS=300",
            server::shared().uri(),
            if server::shared().uri().contains('?') {
                "&"
            } else {
                "?"
            }
        ))
        .await?;
        let impatient = Client::with_options(options)?;
        let refused = impatient
            .database("official_surface_run_command")
            .run_command(doc! { "ping": 1 })
            .selection_criteria(nowhere)
            .await;
        assert!(refused.is_err(), "{refused:?}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn action_optional_applies_a_setter_only_when_there_is_a_value() -> anymongo::error::Result<()>
{
    harness::within(TEST_BOUND, async {
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let db = client.database("official_surface_optional");
        db.drop().await?;
        db.create_collection("kept").await?;
        db.create_collection("other").await?;
        async fn list(db: &anymongo::Database, filter: Option<Document>) -> Vec<String> {
            let mut names = db
                .list_collection_names()
                .optional(filter, |action, filter| action.filter(filter))
                .await
                .expect("the collections are listed");
            names.sort();
            names
        }
        assert_eq!(list(&db, Some(doc! { "name": "kept" })).await, ["kept"]);
        assert_eq!(list(&db, None).await, ["kept", "other"]);
        Ok(())
    })
    .await
}

/// The search index actions take their (empty) options types; SecantusDB has no
/// search indexes, so they are built and not run.
#[test]
fn search_index_actions_take_their_options() {
    let client = Client::with_options(ClientOptions::builder().build()).expect("a client");
    let coll = client
        .database("official_surface")
        .collection::<Document>("search");
    let model = SearchIndexModel::builder()
        .definition(doc! { "mappings": { "dynamic": true } })
        .name(Some("default".to_string()))
        .build();
    let _create = coll
        .create_search_index(model.clone())
        .with_options(CreateSearchIndexOptions::default());
    let _create_many = coll.create_search_indexes([model]).with_options(None);
    let _update = coll
        .update_search_index("default", doc! {})
        .with_options(UpdateSearchIndexOptions::builder().build());
    let _drop = coll
        .drop_search_index("default")
        .with_options(DropSearchIndexOptions::default());
    let _list = coll
        .list_search_indexes()
        .name("default")
        .with_options(ListSearchIndexOptions::default());
}

#[test]
fn change_namespace_types_read_as_the_server_names_them() {
    let read = |name: &str| -> ChangeNamespaceType {
        anymongo::bson::deserialize_from_bson(name.into()).expect("a namespace type")
    };
    assert_eq!(read("collection"), ChangeNamespaceType::Collection);
    assert_eq!(read("timeseries"), ChangeNamespaceType::Timeseries);
    assert_eq!(read("view"), ChangeNamespaceType::View);
    assert_eq!(
        read("materializedView"),
        ChangeNamespaceType::Other("materializedView".to_string())
    );

    // An event serializes back as the server wrote it (e.g. to store it).
    let stored = doc! {
        "_id": { "_data": "8263" },
        "operationType": "create",
        "ns": { "db": "shop", "coll": "orders" },
        "nsType": "timeseries",
    };
    let event: ChangeStreamEvent<Document> =
        anymongo::bson::deserialize_from_document(stored).expect("an event");
    assert_eq!(event.ns_type, Some(ChangeNamespaceType::Timeseries));
    let written = anymongo::bson::serialize_to_document(&event).expect("it serializes");
    assert_eq!(
        written.get_str("operationType").ok(),
        Some("create"),
        "{written}"
    );
    assert_eq!(
        written.get_str("nsType").ok(),
        Some("timeseries"),
        "{written}"
    );
    assert_eq!(
        written
            .get_document("ns")
            .and_then(|ns| ns.get_str("coll"))
            .ok(),
        Some("orders"),
        "{written}"
    );
}

/// The events serialize (here to JSON, for a log) with the official field names, and a
/// server description's error is an [`Error`].
#[tokio::test]
async fn events_serialize_and_server_errors_are_errors() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let commands = Arc::new(Mutex::new(Vec::new()));
        let servers = Arc::new(Mutex::new(Vec::new()));
        let mut options = ClientOptions::parse(server::shared().uri()).await?;
        let seen = commands.clone();
        options.command_event_handler = Some(EventHandler::callback(move |event: CommandEvent| {
            let json = serde_json::to_value(&event).expect("a command event serializes");
            seen.lock().unwrap().push(json);
        }));
        let seen = servers.clone();
        options.sdam_event_handler = Some(EventHandler::callback(move |event: SdamEvent| {
            if let SdamEvent::ServerDescriptionChanged(changed) = &event {
                let error: Option<&Error> = changed.previous_description.error();
                seen.lock().unwrap().push(error.map(ToString::to_string));
            }
            serde_json::to_value(&event).expect("an SDAM event serializes");
        }));
        let client = Client::with_options(options)?;
        client
            .database("official_surface_events")
            .run_command(doc! { "ping": 1 })
            .await?;

        let commands = commands.lock().unwrap().clone();
        let started = commands
            .iter()
            .find(|event| event.get("commandName").and_then(|n| n.as_str()) == Some("ping"))
            .expect("the ping's started event");
        assert_eq!(started["db"], "official_surface_events", "{started}");
        assert!(started.get("requestId").is_some(), "{started}");
        // The first description of a server is Unknown, without an error.
        assert_eq!(servers.lock().unwrap().first(), Some(&None));
        Ok(())
    })
    .await
}

/// The deprecated handler traits of the official crate, for code that still uses them.
#[tokio::test]
#[allow(deprecated)]
async fn the_deprecated_handler_traits_receive_events() -> anymongo::error::Result<()> {
    use anymongo::event::cmap::{CmapEventHandler, ConnectionCheckedOutEvent};
    use anymongo::event::sdam::{SdamEventHandler, TopologyOpeningEvent};

    #[derive(Default)]
    struct Counter {
        checked_out: Mutex<usize>,
        topologies: Mutex<usize>,
    }
    impl CmapEventHandler for Counter {
        fn handle_connection_checked_out_event(&self, _event: ConnectionCheckedOutEvent) {
            *self.checked_out.lock().unwrap() += 1;
        }
    }
    impl SdamEventHandler for Counter {
        fn handle_topology_opening_event(&self, _event: TopologyOpeningEvent) {
            *self.topologies.lock().unwrap() += 1;
        }
    }

    harness::within(TEST_BOUND, async {
        let counter = Arc::new(Counter::default());
        let mut options = ClientOptions::parse(server::shared().uri()).await?;
        options.cmap_event_handler = Some(counter.clone().into());
        options.sdam_event_handler = Some(counter.clone().into());
        let client = Client::with_options(options)?;
        client
            .database("official_surface_events")
            .run_command(doc! { "ping": 1 })
            .await?;
        assert!(*counter.checked_out.lock().unwrap() >= 1);
        assert_eq!(*counter.topologies.lock().unwrap(), 1);
        Ok(())
    })
    .await
}

#[test]
fn server_addresses_serialize_and_read_as_text_or_parts() {
    use anymongo::options::ServerAddress;
    let read = |value: anymongo::bson::Bson| -> ServerAddress {
        anymongo::bson::deserialize_from_bson(value).expect("an address")
    };
    let expected = ServerAddress::Tcp {
        host: "db.example.com".to_string(),
        port: Some(27018),
    };
    assert_eq!(read("db.example.com:27018".into()), expected);
    assert_eq!(
        read(doc! { "host": "DB.example.com", "port": 27018 }.into()),
        expected
    );
    let written = serde_json::to_value(&expected).expect("it serializes");
    assert_eq!(written["Tcp"]["host"], "db.example.com", "{written}");
}

/// `and_run`'s callback returns the crate root's `BoxFuture`, as the official one does.
#[tokio::test]
async fn and_run_callbacks_return_the_root_box_future() -> anymongo::error::Result<()> {
    use futures::FutureExt;
    harness::within(TEST_BOUND, async {
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let coll = client
            .database("official_surface_and_run")
            .collection::<Document>("items");
        coll.drop().await?;
        let mut session = client.start_session().await?;
        fn insert<'b>(
            session: &'b mut anymongo::ClientSession,
            coll: &'b mut anymongo::Collection<Document>,
        ) -> anymongo::BoxFuture<'b, anymongo::error::Result<()>> {
            async move {
                coll.insert_one(doc! { "x": 1 }).session(session).await?;
                Ok(())
            }
            .boxed()
        }
        session
            .start_transaction()
            .and_run(coll.clone(), |session, coll| insert(session, coll))
            .await?;
        assert_eq!(coll.count_documents(doc! {}).await?, 1);
        Ok(())
    })
    .await
}

/// `ServerInfo::last_update_time()`: when the client last updated its description of
/// the server, on the wall clock.
#[tokio::test]
async fn server_info_tells_its_last_update_time() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let updates = Arc::new(Mutex::new(Vec::new()));
        let mut options = ClientOptions::parse(server::shared().uri()).await?;
        let seen = updates.clone();
        options.sdam_event_handler = Some(EventHandler::callback(move |event: SdamEvent| {
            if let SdamEvent::ServerDescriptionChanged(changed) = event {
                let previous = changed.previous_description.last_update_time();
                let new = changed.new_description.last_update_time();
                seen.lock().unwrap().push((previous, new));
            }
        }));
        let before = anymongo::bson::DateTime::now();
        let client = Client::with_options(options)?;
        client
            .database("official_surface_update_time")
            .run_command(doc! { "ping": 1 })
            .await?;
        let after = anymongo::bson::DateTime::now();

        let updates = updates.lock().unwrap().clone();
        let (previous, new) = updates.first().copied().expect("a description changed");
        // The first description is the one made before any check: never updated.
        assert_eq!(previous, None);
        let new = new.expect("a checked server has an update time");
        assert!(
            before <= new && new <= after,
            "{before} <= {new} <= {after}"
        );
        Ok(())
    })
    .await
}

/// `ClientOptions::socks5_proxy`: the connection string's proxy options, and the
/// struct with its builder.
#[tokio::test]
async fn socks5_proxy_options_read_from_the_connection_string() -> anymongo::error::Result<()> {
    let options = ClientOptions::parse(
        "mongodb://localhost/?proxyHost=proxy.test&proxyPort=1081\
         &proxyUsername=user&proxyPassword=secret",
    )
    .await?;
    let expected = Socks5Proxy::builder()
        .host("proxy.test")
        .port(1081)
        .authentication(("user".to_string(), "secret".to_string()))
        .build();
    assert_eq!(options.socks5_proxy, Some(expected));
    let options = ClientOptions::parse("mongodb://localhost/?proxyHost=proxy.test").await?;
    let proxy = options.socks5_proxy.expect("a proxy");
    assert_eq!((proxy.port, proxy.authentication), (None, None));
    // Half the credentials is an error, as in the official crate.
    assert!(
        ClientOptions::parse("mongodb://localhost/?proxyHost=p&proxyUsername=user")
            .await
            .is_err()
    );
    Ok(())
}

/// `ConnectionString`: parsed, its fields read and changed, then given to
/// `ClientOptions::parse`, which also takes `&str`, `&String` and `String`.
#[tokio::test]
async fn connection_strings_parse_into_fields_and_client_options() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let uri = server::shared().uri().to_string();
        let separator = if uri.contains('?') { '&' } else { '?' };
        let mut conn_str = ConnectionString::parse(format!("{uri}{separator}appName=before"))?;
        let HostInfo::HostIdentifiers(hosts) = &conn_str.host_info else {
            panic!(
                "a mongodb:// string has host identifiers: {:?}",
                conn_str.host_info
            );
        };
        assert!(!hosts.is_empty());
        assert_eq!(conn_str.app_name.as_deref(), Some("before"));
        conn_str.app_name = Some("after".to_string());
        conn_str.max_pool_size = Some(3);
        let options = ClientOptions::parse(conn_str).await?;
        assert_eq!(
            (options.app_name.as_deref(), options.max_pool_size),
            (Some("after"), Some(3))
        );
        let client = Client::with_options(options)?;
        client
            .database("official_surface_conn_str")
            .run_command(doc! { "ping": 1 })
            .await?;

        for options in [
            ClientOptions::parse(uri.as_str()).await?,
            ClientOptions::parse(&uri).await?,
            ClientOptions::parse(uri.clone()).await?,
        ] {
            assert!(!options.hosts.is_empty());
        }
        let srv: ConnectionString = "mongodb+srv://cluster0.example.com/?tls=false".parse()?;
        assert_eq!(
            srv.host_info,
            HostInfo::DnsRecord("cluster0.example.com".to_string())
        );
        assert!(srv.is_srv());
        // Secrets stay out of logs.
        let secret = ConnectionString::parse(
            "mongodb://u:Pw9x@h/?proxyHost=p&proxyUsername=a&proxyPassword=Zq8v",
        )?;
        for shown in [format!("{secret:?}"), secret.to_string()] {
            assert!(
                !shown.contains("Pw9x") && !shown.contains("Zq8v"),
                "{shown}"
            );
        }
        assert!(ConnectionString::parse("mongodb://h/?maxPoolSize=nope&w=0&journal=true").is_err());
        Ok(())
    })
    .await
}

/// `ResolverConfig`'s public resolvers, given to `ClientOptions::parse` (a `mongodb://`
/// string needs no look-up, so none is made here; tests/tests/dns.rs resolves through one).
#[tokio::test]
async fn parse_takes_a_resolver_config() -> anymongo::error::Result<()> {
    for config in [
        ResolverConfig::cloudflare(),
        ResolverConfig::google(),
        ResolverConfig::quad9(),
    ] {
        assert_eq!(config.name_servers().len(), 4, "{config:?}");
        let options = ClientOptions::parse(server::shared().uri())
            .resolver_config(config)
            .await?;
        let client = Client::with_options(options)?;
        client
            .database("official_surface_resolver")
            .run_command(doc! { "ping": 1 })
            .await?;
    }
    Ok(())
}

/// The CMAP events, and the SDAM events the official crate reads back, `Deserialize`:
/// what a client published, logged as JSON, reads back equal.
#[tokio::test]
async fn logged_events_read_back() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let cmap = Arc::new(Mutex::new(Vec::new()));
        let sdam = Arc::new(Mutex::new(Vec::new()));
        let mut options = ClientOptions::parse(server::shared().uri()).await?;
        let seen = cmap.clone();
        options.cmap_event_handler = Some(EventHandler::callback(move |event: CmapEvent| {
            seen.lock().unwrap().push(event);
        }));
        let seen = sdam.clone();
        options.sdam_event_handler = Some(EventHandler::callback(move |event: SdamEvent| {
            seen.lock().unwrap().push(event);
        }));
        let client = Client::with_options(options)?;
        client
            .database("official_surface_read_back")
            .run_command(doc! { "ping": 1 })
            .await?;

        fn round_trip<T>(event: &T)
        where
            T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
        {
            let json = serde_json::to_string(event).expect("serializes");
            let read: T = serde_json::from_str(&json).expect("deserializes");
            assert_eq!(&read, event, "{json}");
        }
        let (mut created, mut checked_out) = (0, 0);
        for event in cmap.lock().unwrap().iter() {
            match event {
                CmapEvent::PoolCreated(event) => {
                    round_trip(event);
                    created += 1;
                }
                CmapEvent::ConnectionCheckedOut(event) => {
                    round_trip(event);
                    checked_out += 1;
                }
                CmapEvent::ConnectionCreated(event) => round_trip(event),
                CmapEvent::ConnectionCheckedIn(event) => round_trip(event),
                _ => {}
            }
        }
        assert!(created >= 1 && checked_out >= 1, "{created} {checked_out}");
        let mut opened = 0;
        for event in sdam.lock().unwrap().iter() {
            match event {
                SdamEvent::TopologyOpening(event) => {
                    round_trip(event);
                    opened += 1;
                }
                SdamEvent::ServerOpening(event) => round_trip(event),
                SdamEvent::ServerHeartbeatStarted(event) => round_trip(event),
                _ => {}
            }
        }
        assert_eq!(opened, 1);
        Ok(())
    })
    .await
}

/// `ClientSession::id()` is a `&Document` from the start, as in the official crate: the
/// `lsid` the session's commands carry, kept after the session ended.
#[tokio::test]
async fn a_session_has_its_id_from_the_start() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let mut options = ClientOptions::parse(server::shared().uri()).await?;
        let seen = sent.clone();
        options.command_event_handler = Some(EventHandler::callback(move |event: CommandEvent| {
            if let CommandEvent::Started(started) = event {
                if started.command_name == "insert" {
                    seen.lock().unwrap().push(started.command);
                }
            }
        }));
        let client = Client::with_options(options)?;
        let mut session = client.start_session().await?;
        let id: &Document = session.id();
        let id = id.clone();
        assert!(
            matches!(id.get("id"), Some(anymongo::bson::Bson::Binary(_))),
            "{id}"
        );
        let other = client.start_session().await?;
        assert_ne!(other.id(), &id, "two sessions at once have two ids");

        client
            .database("official_surface_sessions")
            .collection::<Document>("items")
            .insert_one(doc! { "n": 1 })
            .session(&mut session)
            .await?;
        let inserts = sent.lock().unwrap().clone();
        assert_eq!(inserts.len(), 1);
        assert_eq!(inserts[0].get_document("lsid").ok(), Some(&id));
        session.end_session();
        assert_eq!(session.id(), &id, "the id outlives the session's end");
        Ok(())
    })
    .await
}

/// bson 2's free functions and error types, which the official crate's default
/// features give as `mongodb::bson`, through `anymongo::bson`.
#[test]
fn bson_2_names_serialize_and_report_errors() {
    use anymongo::bson::{self, Bson};

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Book {
        title: String,
        pages: i32,
    }

    #[derive(Debug)]
    enum AppError {
        Read(bson::de::Error),
        Write(bson::ser::Error),
    }
    impl From<bson::de::Error> for AppError {
        fn from(error: bson::de::Error) -> Self {
            AppError::Read(error)
        }
    }
    impl From<bson::ser::Error> for AppError {
        fn from(error: bson::ser::Error) -> Self {
            AppError::Write(error)
        }
    }
    fn read(document: Document) -> Result<Book, AppError> {
        Ok(bson::from_document(document)?)
    }
    fn write(book: &Book) -> Result<Vec<u8>, AppError> {
        Ok(bson::to_vec(&bson::to_document(book)?)?)
    }

    let book = Book {
        title: "Dune".into(),
        pages: 412,
    };
    let bytes = write(&book).unwrap();
    let back: Book = bson::from_slice(&bytes).unwrap();
    assert_eq!(back, book);
    assert_eq!(bson::from_reader::<_, Book>(&bytes[..]).unwrap(), book);
    assert_eq!(
        bson::to_bson(&book).unwrap(),
        Bson::Document(doc! { "title": "Dune", "pages": 412 })
    );
    let raw = bson::to_raw_document_buf(&book).unwrap();
    assert_eq!(raw.get_str("title").unwrap(), "Dune");
    assert_eq!(bson::from_bson::<i32>(Bson::Int32(7)).unwrap(), 7);
    match read(doc! { "title": 1 }).unwrap_err() {
        AppError::Read(error) => {
            assert!(error.to_string().contains("expected a string"), "{error}")
        }
        AppError::Write(error) => panic!("a read failed as a write: {error}"),
    }
    // `?` on them in a function returning the driver's errors.
    fn driver_read(document: Document) -> anymongo::error::Result<Book> {
        Ok(bson::from_document(document)?)
    }
    let error = driver_read(doc! { "pages": "many" }).unwrap_err();
    assert!(
        matches!(
            *error.kind,
            anymongo::error::ErrorKind::BsonDeserialization(_)
        ),
        "{error:?}"
    );
}
