//! A load balancer in front of a real server, for running the `load_balancer` unified
//! test files against SecantusDB (which has no load-balanced mode of its own).
//!
//! It listens on 127.0.0.1 and plays an L4 load balancer in front of mongos servers:
//! each accepted connection gets a connection of its own to the server and a
//! `serviceId`, round-robin from the balancer's list (one for the test README's
//! `SINGLE_MONGOS_LB_URI`, two for `MULTI_MONGOS_LB_URI`). Every message is forwarded
//! as it is, but hellos (OP_MSG `hello`/`isMaster`), whose `loadBalanced` field is
//! taken out, and whose replies are made a mongos's in load-balanced mode: `msg:
//! "isdbgrid"`, the connection's `serviceId`, and none of the replica set's fields (the
//! test README's "mock server support for returning a serviceId field"). Like a mongos
//! it also gives a `recoveryToken` with every successful reply in a transaction and
//! keeps the one it gets back with commitTransaction and abortTransaction to itself
//! (Transactions spec, "recoveryToken field"). So cursors, transactions and fail
//! points are the server's own — a fail point that closes the server's connection
//! closes the client's — and the handshake's client metadata (`appName`, which fail
//! points may filter on) reaches the server.
//!
//! The same relay plays the mongoses of a test sharded cluster
//! ([`crate::mongos_proxy`]): `Role::Mongos` answers hellos (the legacy OP_QUERY
//! `isMaster` of the handshake too) as a mongos without a `serviceId`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anymongo::bson::oid::ObjectId;
use anymongo::bson::{doc, Bson, Document, RawDocumentBuf};
use anymongo::wire::{op_code, MessageHeader, MsgFlags, OpReply};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use crate::mock::{frame, is_hello, op_msg, query_document, read_frame};
use crate::mongos_proxy::{Routed, Router};

/// The replica set fields a mongos does not report.
const REPLICA_SET_FIELDS: &[&str] = &[
    "setName",
    "setVersion",
    "hosts",
    "passives",
    "arbiters",
    "primary",
    "me",
    "secondary",
    "arbiterOnly",
    "hidden",
    "tags",
    "electionId",
    "lastWrite",
    "topologyVersion",
];

/// A running proxy; its listener and connections end when it is dropped.
pub struct LoadBalancerProxy {
    address: String,
    service_ids: Arc<Vec<ObjectId>>,
    acceptor: JoinHandle<()>,
}

impl LoadBalancerProxy {
    /// Listens on a free port of 127.0.0.1, in front of `server` (`host:port`), handing
    /// out `services` distinct serviceIds round-robin. Must run inside a tokio runtime,
    /// which runs the proxy's tasks.
    pub async fn start(server: &str, services: usize) -> std::io::Result<LoadBalancerProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?.to_string();
        let service_ids: Arc<Vec<ObjectId>> =
            Arc::new((0..services.max(1)).map(|_| ObjectId::new()).collect());
        let acceptor = tokio::spawn(accept(listener, server.to_owned(), service_ids.clone()));
        Ok(LoadBalancerProxy {
            address,
            service_ids,
            acceptor,
        })
    }

    /// `127.0.0.1:port`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// `mongodb://127.0.0.1:port/?loadBalanced=true`.
    pub fn uri(&self) -> String {
        format!("mongodb://{}/?loadBalanced=true", self.address)
    }

    /// The serviceIds the proxy hands out, in order.
    pub fn service_ids(&self) -> &[ObjectId] {
        &self.service_ids
    }
}

impl Drop for LoadBalancerProxy {
    fn drop(&mut self) {
        // Aborting the acceptor drops its JoinSet, which aborts every connection.
        self.acceptor.abort();
    }
}

async fn accept(listener: TcpListener, server: String, service_ids: Arc<Vec<ObjectId>>) {
    let next = AtomicUsize::new(0);
    serve(listener, server, move || {
        Role::LoadBalancer(service_ids[next.fetch_add(1, Ordering::Relaxed) % service_ids.len()])
    })
    .await
}

/// What the relay plays in front of the server, for one client connection.
#[derive(Clone)]
pub(crate) enum Role {
    /// A load balancer, the connection going to the mongos of this `serviceId`.
    LoadBalancer(ObjectId),
    /// One mongos of a test sharded cluster: what it knows of the cluster's
    /// transactions.
    Mongos(Router),
}

/// Accepts connections on `listener` until the task is aborted, relaying each to a
/// connection of its own to `server` in the role `role` gives it; aborting the task
/// drops its JoinSet, which aborts every connection.
pub(crate) async fn serve(listener: TcpListener, server: String, role: impl Fn() -> Role) {
    let mut connections = JoinSet::new();
    while let Ok((client, _)) = listener.accept().await {
        let role = role();
        let server = server.clone();
        connections.spawn(async move {
            if let Ok(backend) = TcpStream::connect(&server).await {
                let _ = backend.set_nodelay(true);
                let _ = client.set_nodelay(true);
                relay(client, backend, role).await;
            }
        });
        // Forget the connections that ended.
        while connections.try_join_next().is_some() {}
    }
}

/// Relays one client connection, request by request, until either side closes it or
/// sends something unreadable; both connections are then closed. A mongos may answer
/// a request itself or change it ([`Router::receive`]).
async fn relay(mut client: TcpStream, mut backend: TcpStream, role: Role) {
    loop {
        let Some((header, body)) = read_frame(&mut client).await else {
            return;
        };
        let (header, body, commit) = match &role {
            Role::Mongos(router) => match router.receive(header, body) {
                Routed::Answer(answer) => {
                    if client.write_all(&answer).await.is_err() {
                        return;
                    }
                    continue;
                }
                Routed::Forward {
                    header,
                    body,
                    commit,
                } => (header, body, commit),
            },
            Role::LoadBalancer(_) => (header, body, None),
        };
        let (request, kind) = request(&header, &body);
        if backend.write_all(&request).await.is_err() {
            return;
        }
        if !expects_reply(&header, &body) {
            continue;
        }
        let Some((reply_header, reply_body)) = read_frame(&mut backend).await else {
            return;
        };
        if let (Role::Mongos(router), Some(commit)) = (&role, commit) {
            router.replied(commit, &reply_header, &reply_body);
        }
        let service_id = match &role {
            Role::LoadBalancer(service_id) => Some(*service_id),
            Role::Mongos(_) => None,
        };
        let reply = match kind {
            Kind::Hello => hello_reply(&reply_header, &reply_body, service_id),
            Kind::InTransaction => transaction_reply(&reply_header, &reply_body),
            Kind::Other => Some(frame(&reply_header, &reply_body)),
        };
        let Some(reply) = reply else {
            return;
        };
        if client.write_all(&reply).await.is_err() {
            return;
        }
    }
}

/// Whether the server answers the request: not an OP_MSG flagged moreToCome (an
/// unacknowledged write).
fn expects_reply(header: &MessageHeader, body: &[u8]) -> bool {
    op_msg(header, body).is_none_or(|message| !message.flags.contains(MsgFlags::MORE_TO_COME))
}

/// What a request is to the balancer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A hello (OP_MSG `hello` or `isMaster`): the reply is a mongos's.
    Hello,
    /// A command in a transaction (`autocommit: false`): the reply gets a
    /// `recoveryToken`.
    InTransaction,
    /// Anything else, forwarded as it is both ways.
    Other,
}

/// A request as the server gets it, and what it is: a hello loses `loadBalanced`, a
/// command in a transaction its `recoveryToken` (a mongos's own business).
fn request(header: &MessageHeader, body: &[u8]) -> (Vec<u8>, Kind) {
    let unchanged = || (frame(header, body), Kind::Other);
    let Some(mut message) = op_msg(header, body) else {
        // The legacy hello of a handshake (OP_QUERY `isMaster`): only its reply changes.
        let legacy_hello = header.op_code == op_code::QUERY
            && query_document(body).is_some_and(|query| is_hello(&query));
        return match legacy_hello {
            true => (frame(header, body), Kind::Hello),
            false => unchanged(),
        };
    };
    let Ok(mut command) = Document::try_from(message.body.as_ref()) else {
        return unchanged();
    };
    let (kind, removed) = match is_hello(&command) {
        true => (Kind::Hello, command.remove("loadBalanced")),
        false if matches!(command.get_bool("autocommit"), Ok(false)) => {
            (Kind::InTransaction, command.remove("recoveryToken"))
        }
        false => return unchanged(),
    };
    if removed.is_none() {
        return (frame(header, body), kind);
    }
    match RawDocumentBuf::try_from(&command) {
        Ok(raw) => {
            message.body = raw;
            (message.encode(header.request_id, header.response_to), kind)
        }
        Err(_) => unchanged(),
    }
}

/// The reply to a command in a transaction, with a mongos's `recoveryToken` if it
/// succeeded.
fn transaction_reply(header: &MessageHeader, body: &[u8]) -> Option<Vec<u8>> {
    let mut message = op_msg(header, body)?;
    let mut reply = Document::try_from(message.body.as_ref()).ok()?;
    if is_ok(&reply) {
        reply.insert("recoveryToken", doc! { "recoveryShardId": "secantus" });
    }
    message.body = RawDocumentBuf::try_from(&reply).ok()?;
    Some(message.encode(header.request_id, header.response_to))
}

/// Whether a reply says `ok: 1`.
pub(crate) fn is_ok(reply: &Document) -> bool {
    match reply.get("ok") {
        Some(Bson::Double(ok)) => *ok == 1.0,
        Some(Bson::Int32(ok)) => *ok == 1,
        Some(Bson::Int64(ok)) => *ok == 1,
        _ => false,
    }
}

/// The server's hello reply (an OP_MSG, or the OP_REPLY of a legacy hello) as a mongos
/// gives it: behind a load balancer, with the connection's `serviceId`.
fn hello_reply(
    header: &MessageHeader,
    body: &[u8],
    service_id: Option<ObjectId>,
) -> Option<Vec<u8>> {
    let as_mongos = |reply: &mut Document| {
        for field in REPLICA_SET_FIELDS {
            reply.remove(*field);
        }
        if is_ok(reply) {
            reply.insert("msg", "isdbgrid");
            if let Some(service_id) = service_id {
                reply.insert("serviceId", service_id);
            }
        }
        RawDocumentBuf::try_from(&*reply).ok()
    };
    if header.op_code == op_code::REPLY {
        let legacy = OpReply::decode(header, body).ok()?;
        let mut reply = Document::try_from(legacy.documents.first()?.as_ref()).ok()?;
        let reply = OpReply::command_reply(as_mongos(&mut reply)?);
        return Some(reply.encode(header.request_id, header.response_to));
    }
    let mut message = op_msg(header, body)?;
    let mut reply = Document::try_from(message.body.as_ref()).ok()?;
    message.body = as_mongos(&mut reply)?;
    Some(message.encode(header.request_id, header.response_to))
}

#[cfg(test)]
mod tests {
    use super::*;
    use anymongo::wire::OpMsg;

    fn split(frame: &[u8]) -> (MessageHeader, Vec<u8>) {
        crate::mock::split_frame(frame).unwrap()
    }

    fn message(body: Document) -> Vec<u8> {
        OpMsg::new(RawDocumentBuf::try_from(&body).unwrap()).encode(7, 3)
    }

    fn body_of(frame: &[u8]) -> Document {
        let (header, body) = split(frame);
        Document::try_from(op_msg(&header, &body).unwrap().body.as_ref()).unwrap()
    }

    #[test]
    fn hellos_lose_load_balanced_and_replies_become_a_mongos_with_a_service_id() {
        let (header, body) = split(&message(
            doc! { "hello": 1, "loadBalanced": true, "$db": "admin" },
        ));
        let (hello, kind) = request(&header, &body);
        assert_eq!(kind, Kind::Hello);
        assert_eq!(body_of(&hello), doc! { "hello": 1, "$db": "admin" });
        assert_eq!(split(&hello).0.request_id, 7);
        let find = message(doc! { "find": "c", "$db": "d" });
        let (header, body) = split(&find);
        assert_eq!(request(&header, &body), (find.clone(), Kind::Other));
        let service_id = ObjectId::new();
        let reply = message(doc! {
            "isWritablePrimary": true, "setName": "secantus", "hosts": ["a:1"],
            "topologyVersion": { "counter": 0 }, "maxWireVersion": 27, "ok": 1.0,
        });
        let (header, body) = split(&reply);
        let rewritten = hello_reply(&header, &body, Some(service_id)).unwrap();
        assert_eq!(
            body_of(&rewritten),
            doc! { "isWritablePrimary": true, "maxWireVersion": 27, "ok": 1.0,
            "msg": "isdbgrid", "serviceId": service_id }
        );
        assert_eq!(split(&rewritten).0.response_to, 3);
    }

    #[test]
    fn transactions_get_a_recovery_token_that_the_server_never_sees() {
        let commit = message(doc! {
            "commitTransaction": 1, "txnNumber": 1_i64, "autocommit": false,
            "recoveryToken": { "recoveryShardId": "secantus" }, "$db": "admin",
        });
        let (header, body) = split(&commit);
        let (forwarded, kind) = request(&header, &body);
        assert_eq!(kind, Kind::InTransaction);
        assert_eq!(
            body_of(&forwarded),
            doc! { "commitTransaction": 1, "txnNumber": 1_i64, "autocommit": false, "$db": "admin" }
        );
        let (header, body) = split(&message(doc! { "ok": 1.0 }));
        let reply = transaction_reply(&header, &body).unwrap();
        assert_eq!(
            body_of(&reply),
            doc! { "ok": 1.0, "recoveryToken": { "recoveryShardId": "secantus" } }
        );
        let (header, body) = split(&message(doc! { "ok": 0.0, "code": 251 }));
        let reply = transaction_reply(&header, &body).unwrap();
        assert!(!body_of(&reply).contains_key("recoveryToken"));
    }

    #[test]
    fn unacknowledged_writes_expect_no_reply() {
        let mut unacknowledged =
            OpMsg::new(RawDocumentBuf::try_from(&doc! { "insert": "c" }).unwrap());
        unacknowledged.flags = MsgFlags::MORE_TO_COME;
        let (header, body) = split(&unacknowledged.encode(1, 0));
        assert!(!expects_reply(&header, &body));
        let (header, body) = split(&message(doc! { "insert": "c" }));
        assert!(expects_reply(&header, &body));
    }
}
