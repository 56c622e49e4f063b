//! The `tracing` target hosts log under, shared with the driver's own connection
//! messages (`anymongo::logging`, which re-exports it).

/// The `tracing` target of the `connection` component (connection pool messages, and
/// what hosts say about their connections, such as unusable system certificates).
pub const CONNECTION: &str = "anymongo::connection";
