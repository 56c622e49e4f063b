//! The option types, in one place, as the official `mongodb` crate has them: what a
//! client, a database, a collection, an operation, a session or a transaction can be
//! given. They are re-exported from the modules that define them.
//!
//! ```no_run
//! # async fn example() -> anymongo::Result<()> {
//! use anymongo::options::{ClientOptions, ServerApi, ServerApiVersion};
//! let mut options = ClientOptions::parse("mongodb://localhost:27017").await?;
//! options.app_name = Some("inventory".into());
//! options.server_api = Some(ServerApi::builder().version(ServerApiVersion::V1).build());
//! let client = anymongo::Client::with_options(options)?;
//! # Ok(()) }
//! ```

pub use crate::auth::{AuthMechanism, Credential};
pub use crate::change_stream::{
    ChangeStreamOptions, FullDocumentBeforeChangeType, FullDocumentType,
};
pub use crate::client::{ClientConfig, MonitoringThreads};
pub use crate::collection_management::{
    ChangeStreamPreAndPostImages, ClusteredIndex, CreateCollectionOptions, DropCollectionOptions,
    DropDatabaseOptions, IndexOptionDefaults, TimeseriesGranularity, TimeseriesOptions,
    ValidationAction, ValidationLevel,
};
pub use crate::concern::{Acknowledgment, ReadConcern, ReadConcernLevel, WriteConcern};
pub use crate::crud::bulk_write::{BulkWriteOptions, ClientBulkWriteOptions};
pub use crate::crud::bulk_write::{
    DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel, UpdateManyModel,
    UpdateModifications, UpdateOneModel, WriteModel,
};
pub use crate::crud::{
    AggregateOptions, Collation, CollationAlternate, CollationCaseFirst, CollationMaxVariable,
    CollationStrength, CountOptions, CursorType, DeleteOptions, DistinctOptions,
    EstimatedDocumentCountOptions, FindOneAndDeleteOptions, FindOneAndReplaceOptions,
    FindOneAndUpdateOptions, FindOneOptions, FindOptions, Hint, InsertManyOptions,
    InsertOneOptions, ReplaceOptions, ReturnDocument, RunCommandOptions, RunCursorCommandOptions,
    TimeoutMode, UpdateOptions,
};
/// The options of [`Client::database_with_options`](crate::Client::database_with_options).
pub type DatabaseOptions = crate::database::Concerns;
/// The options of [`Database::collection_with_options`](crate::Database::collection_with_options).
pub type CollectionOptions = crate::database::Concerns;
pub use crate::default_runtime::ResolverConfig;
pub use crate::enumerate::{ListCollectionsOptions, ListDatabasesOptions};
pub use crate::gridfs::{
    GridFsBucketOptions, GridFsDownloadByNameOptions, GridFsFindOneOptions, GridFsFindOptions,
    GridFsUploadOptions,
};
pub use crate::handshake::DriverInfo;
pub use crate::index_management::{
    CommitQuorum, CreateIndexOptions, CreateSearchIndexOptions, DropIndexOptions,
    DropSearchIndexOptions, IndexOptions, IndexVersion, ListIndexesOptions, ListSearchIndexOptions,
    Sphere2DIndexVersion, TextIndexVersion, UpdateSearchIndexOptions,
};
pub use crate::open_telemetry::OpentelemetryOptions;
pub use crate::rt::{Tls, TlsOptions};
pub use crate::selection::{
    HedgedReadOptions, Predicate, ReadPreference, ReadPreferenceMode, ReadPreferenceOptions,
    SelectionCriteria, TagSet,
};
pub use crate::session::SessionOptions;
pub use crate::srv::ParseConnectionString;
pub use crate::transactions::TransactionOptions;
pub use crate::uri::{
    ClientOptions, Compressor, ConnectionString, HostInfo, ServerAddress, ServerMonitoringMode,
    Socks5Proxy,
};
pub use crate::versioned_api::{ServerApi, ServerApiVersion};

/// MONGODB-OIDC: the token callback of [`Credential::oidc_callback`], and what it is
/// given and returns.
pub mod oidc {
    pub use crate::auth::oidc::{Callback, CallbackContext, IdpServerInfo, IdpServerResponse};
}
