//! A test sharded cluster: several mongoses in front of one real server, for running
//! unified test files written for sharded deployments against SecantusDB (which
//! plays a single-node replica set).
//!
//! Each mongos is a [`crate::lb_proxy`] relay listening on a port of 127.0.0.1 of its
//! own, in the role `Role::Mongos`: its hellos answer as a mongos (`msg:
//! "isdbgrid"`, none of the replica set's fields, no `serviceId`), every successful
//! reply in a transaction carries a `recoveryToken`, and everything else is forwarded
//! as it is, on a connection of its own to the server. So data and cursors are the
//! one server's.
//!
//! Fail points are targeted as far as the server's `appName` filter allows: each
//! mongos tags the application name of the handshakes that come through it, and the
//! `appName` of the `failCommand` fail points set through it, with its own number
//! (`name@mongos0`), so that a fail point with an `appName`, set through one mongos,
//! fires only for the commands that come through that mongos, as on a real cluster.
//! One without an `appName` fires for the commands that come through any of them.
//!
//! What the mongoses keep apart is transactions, as real mongoses do (each router
//! tracks the transactions started through it): a command of a transaction that
//! reaches another mongos than the one its first command went to is refused with
//! `NoSuchTransaction` (TransientTransactionError), but commitTransaction and
//! abortTransaction with a `recoveryToken`, which a mongos recovers the transaction
//! with (Transactions spec, "recoveryToken field"): an abort is forwarded, and so is
//! a commit of a transaction whose commit succeeded before on its own mongos; the
//! commit of one never committed is refused with `NoSuchTransaction`, as the
//! recovery shard, with no decision to recover, answers it. A driver that does not
//! pin a transaction to its mongos ("Mongos Pinning") fails there.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use anymongo::bson::{doc, Bson, Document, RawDocumentBuf};
use anymongo::wire::{op_code, MessageHeader, OpMsg};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::lb_proxy::{is_ok, serve, Role};
use crate::mock::is_hello;
use crate::mock::{frame, op_msg, query_document, split_frame};

/// NoSuchTransaction, the error of a mongos that does not know the transaction.
const NO_SUCH_TRANSACTION: i32 = 251;

/// A transaction: its `lsid` (as BSON bytes) and its `txnNumber`.
type TransactionKey = (Vec<u8>, i64);

/// What the mongoses know of the cluster's transactions.
#[derive(Debug, Default)]
struct Transactions {
    /// The mongos each transaction started on.
    owners: HashMap<TransactionKey, usize>,
    /// The transactions whose commit succeeded, which a commit elsewhere recovers.
    committed: std::collections::HashSet<TransactionKey>,
}

/// What one mongos knows of the cluster's transactions: the cluster-wide table of
/// which mongos each transaction started on, and its own number in it.
#[derive(Clone)]
pub(crate) struct Router {
    index: usize,
    transactions: Arc<Mutex<Transactions>>,
}

/// What a mongos does with a request.
pub(crate) enum Routed {
    /// Answers it itself, with this frame.
    Answer(Vec<u8>),
    /// Forwards this frame (the request, rewritten); `commit` names the transaction a
    /// commitTransaction on its own mongos ends, whose outcome the reply tells
    /// ([`Router::replied`]).
    Forward {
        header: MessageHeader,
        body: Vec<u8>,
        commit: Option<TransactionKey>,
    },
}

impl Router {
    /// What the mongos does with the request (`header`, `body`): refuses a command of
    /// a transaction it does not know, or forwards it with the mongos's tag in its
    /// application name or fail point ([`tag_app_name`]).
    pub(crate) fn receive(&self, header: MessageHeader, body: Vec<u8>) -> Routed {
        let forward = |header, body| Routed::Forward {
            header,
            body,
            commit: None,
        };
        if header.op_code == op_code::QUERY {
            return match query_document(&body)
                .and_then(|mut query| tag_app_name(&mut query, self.index).then_some(query))
            {
                Some(query) => match requery(&header, &body, &query) {
                    Some((header, body)) => forward(header, body),
                    None => forward(header, body),
                },
                None => forward(header, body),
            };
        }
        let Some(mut message) = op_msg(&header, &body) else {
            return forward(header, body);
        };
        let Ok(mut command) = Document::try_from(message.body.as_ref()) else {
            return forward(header, body);
        };
        let mut transactions = self
            .transactions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(reply) = route(&mut transactions, self.index, &command) {
            let answer = RawDocumentBuf::try_from(&reply).map(OpMsg::new);
            if let Ok(answer) = answer {
                return Routed::Answer(answer.encode(header.request_id, header.request_id));
            }
        }
        let commit = committing(&transactions, self.index, &command);
        drop(transactions);
        if !tag_app_name(&mut command, self.index) {
            return Routed::Forward {
                header,
                body,
                commit,
            };
        }
        match RawDocumentBuf::try_from(&command) {
            Ok(raw) => {
                message.body = raw;
                let frame = message.encode(header.request_id, header.response_to);
                match split_frame(&frame) {
                    Some((header, body)) => Routed::Forward {
                        header,
                        body,
                        commit,
                    },
                    None => forward(header, body),
                }
            }
            Err(_) => forward(header, body),
        }
    }

    /// Records the outcome of the commit of `transaction` its own mongos forwarded:
    /// its reply (`header`, `body`) says `ok: 1`, a write concern error or not.
    pub(crate) fn replied(&self, transaction: TransactionKey, header: &MessageHeader, body: &[u8]) {
        let reply =
            op_msg(header, body).and_then(|reply| Document::try_from(reply.body.as_ref()).ok());
        if reply.is_some_and(|reply| is_ok(&reply)) {
            self.transactions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .committed
                .insert(transaction);
        }
    }
}

/// The transaction `command` belongs to (`autocommit: false`), if it does.
fn transaction_of(command: &Document) -> Option<TransactionKey> {
    if !matches!(command.get_bool("autocommit"), Ok(false)) {
        return None;
    }
    let lsid = anymongo::bson::serialize_to_vec(command.get_document("lsid").ok()?).ok()?;
    Some((lsid, command.get_i64("txnNumber").ok()?))
}

/// The command's name (its first key).
fn name_of(command: &Document) -> &str {
    command
        .keys()
        .next()
        .map(String::as_str)
        .unwrap_or_default()
}

/// Where the mongos `index` sends `command`: `None` to the server (recording the
/// transaction a first command starts), or the error reply it answers with itself
/// for a command of a transaction started on another mongos that it cannot recover.
fn route(transactions: &mut Transactions, index: usize, command: &Document) -> Option<Document> {
    let key = transaction_of(command)?;
    if matches!(command.get_bool("startTransaction"), Ok(true)) {
        transactions.owners.insert(key, index);
        return None;
    }
    let owner = *transactions.owners.get(&key)?;
    let recovered = command.contains_key("recoveryToken")
        && match name_of(command) {
            "abortTransaction" => true,
            "commitTransaction" => transactions.committed.contains(&key),
            _ => false,
        };
    if owner == index || recovered {
        return None;
    }
    Some(doc! {
        "ok": 0.0,
        "errmsg": format!(
            "transaction {} was not started on this mongos ({index}) but on mongos {owner}",
            key.1
        ),
        "code": NO_SUCH_TRANSACTION,
        "codeName": "NoSuchTransaction",
        "errorLabels": ["TransientTransactionError"],
    })
}

/// The transaction a commitTransaction on the mongos `index`, its own, ends.
fn committing(
    transactions: &Transactions,
    index: usize,
    command: &Document,
) -> Option<TransactionKey> {
    if name_of(command) != "commitTransaction" {
        return None;
    }
    let key = transaction_of(command)?;
    (transactions.owners.get(&key) == Some(&index)).then_some(key)
}

/// Tags, with the mongos `index`, the application name of a hello's client metadata
/// or the `appName` of a failCommand fail point (`name@mongos0`); whether it changed
/// `command`.
fn tag_app_name(command: &mut Document, index: usize) -> bool {
    let tag = |name: &str| format!("{name}@mongos{index}");
    let name = if is_hello(command) {
        command
            .get_document_mut("client")
            .and_then(|client| client.get_document_mut("application"))
            .ok()
            .and_then(|application| match application.get_mut("name") {
                Some(Bson::String(name)) => Some(name),
                _ => None,
            })
    } else if name_of(command) == "configureFailPoint" {
        command
            .get_document_mut("data")
            .ok()
            .and_then(|data| match data.get_mut("appName") {
                Some(Bson::String(name)) => Some(name),
                _ => None,
            })
    } else {
        None
    };
    match name {
        Some(name) => {
            *name = tag(name);
            true
        }
        None => false,
    }
}

/// An OP_QUERY frame (`header`, `body`) with `query` in place of its query document.
fn requery(
    header: &MessageHeader,
    body: &[u8],
    query: &Document,
) -> Option<(MessageHeader, Vec<u8>)> {
    // flags, the collection's cstring, numberToSkip and numberToReturn, the document.
    let name_end = 4 + body.get(4..)?.iter().position(|&b| b == 0)?;
    let mut rebuilt = body.get(..name_end + 1 + 8)?.to_vec();
    rebuilt.extend_from_slice(&anymongo::bson::serialize_to_vec(query).ok()?);
    let header = MessageHeader {
        length: i32::try_from(rebuilt.len() + 16).ok()?,
        ..*header
    };
    split_frame(&frame(&header, &rebuilt))
}

/// Running mongoses; their listeners and connections end when it is dropped.
pub struct ShardedCluster {
    addresses: Vec<String>,
    acceptors: Vec<JoinHandle<()>>,
}

impl ShardedCluster {
    /// Starts `mongoses` mongoses (at least one) on free ports of 127.0.0.1, in front
    /// of `server` (`host:port`). Must run inside a tokio runtime, which runs their
    /// tasks.
    pub async fn start(server: &str, mongoses: usize) -> std::io::Result<ShardedCluster> {
        let transactions = Arc::new(Mutex::new(Transactions::default()));
        let mut cluster = ShardedCluster {
            addresses: Vec::new(),
            acceptors: Vec::new(),
        };
        for index in 0..mongoses.max(1) {
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            cluster.addresses.push(listener.local_addr()?.to_string());
            let router = Router {
                index,
                transactions: transactions.clone(),
            };
            cluster.acceptors.push(tokio::spawn(serve(
                listener,
                server.to_owned(),
                move || Role::Mongos(router.clone()),
            )));
        }
        Ok(cluster)
    }

    /// The mongoses' addresses, `127.0.0.1:port`.
    pub fn addresses(&self) -> &[String] {
        &self.addresses
    }

    /// `mongodb://` with the first `mongoses` mongoses as its hosts (a unified test's
    /// client with `useMultipleMongoses: true` gets them all, others one).
    pub fn uri(&self, mongoses: usize) -> String {
        let hosts: Vec<&str> = self
            .addresses
            .iter()
            .take(mongoses.max(1))
            .map(String::as_str)
            .collect();
        format!("mongodb://{}/", hosts.join(","))
    }
}

impl Drop for ShardedCluster {
    fn drop(&mut self) {
        for acceptor in &self.acceptors {
            acceptor.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_transaction(name: &str, txn_number: i64, extra: Document) -> Document {
        let mut command = doc! {
            name: 1, "lsid": { "id": 7 }, "txnNumber": txn_number, "autocommit": false,
        };
        command.extend(extra);
        command
    }

    #[test]
    fn a_transaction_belongs_to_the_mongos_it_started_on() {
        let mut transactions = Transactions::default();
        let start = in_transaction("insert", 1, doc! { "startTransaction": true });
        assert_eq!(route(&mut transactions, 0, &start), None);
        // Its next command on the same mongos goes through; on another it is refused.
        let next = in_transaction("find", 1, doc! {});
        assert_eq!(route(&mut transactions, 0, &next), None);
        let refused = route(&mut transactions, 1, &next).unwrap();
        assert_eq!(refused.get_i32("code").unwrap(), NO_SUCH_TRANSACTION);
        assert_eq!(
            refused.get_array("errorLabels").unwrap()[0].as_str(),
            Some("TransientTransactionError")
        );
        // An abort elsewhere is recovered with its recoveryToken, refused without.
        let token = doc! { "recoveryToken": { "recoveryShardId": "secantus" } };
        let abort = in_transaction("abortTransaction", 1, doc! {});
        assert!(route(&mut transactions, 1, &abort).is_some());
        let recovering = in_transaction("abortTransaction", 1, token.clone());
        assert_eq!(route(&mut transactions, 1, &recovering), None);
        // A commit elsewhere is recovered only once a commit succeeded on its mongos.
        let commit = in_transaction("commitTransaction", 1, token.clone());
        assert!(route(&mut transactions, 1, &commit).is_some());
        assert_eq!(committing(&transactions, 1, &commit), None);
        let key = committing(&transactions, 0, &commit).unwrap();
        transactions.committed.insert(key);
        assert_eq!(route(&mut transactions, 1, &commit), None);
        // Only an end recovers: a token on another command changes nothing.
        let find = in_transaction("find", 1, token);
        assert!(route(&mut transactions, 1, &find).is_some());
        // The next transaction may start anywhere; commands outside transactions and
        // of unknown transactions go through.
        let second = in_transaction("insert", 2, doc! { "startTransaction": true });
        assert_eq!(route(&mut transactions, 1, &second), None);
        let next = in_transaction("find", 2, doc! {});
        assert!(route(&mut transactions, 0, &next).is_some());
        assert_eq!(route(&mut transactions, 1, &doc! { "find": "c" }), None);
        let unknown = in_transaction("find", 9, doc! {});
        assert_eq!(route(&mut transactions, 1, &unknown), None);
    }

    #[test]
    fn application_names_of_handshakes_and_fail_points_are_tagged() {
        let mut hello = doc! {
            "isMaster": 1, "client": { "application": { "name": "app" }, "os": {} },
        };
        assert!(tag_app_name(&mut hello, 1));
        assert_eq!(
            hello.get_document("client").unwrap(),
            &doc! { "application": { "name": "app@mongos1" }, "os": {} }
        );
        let mut fail_point = doc! {
            "configureFailPoint": "failCommand", "mode": "alwaysOn",
            "data": { "failCommands": ["insert"], "appName": "app" },
        };
        assert!(tag_app_name(&mut fail_point, 0));
        assert_eq!(
            fail_point
                .get_document("data")
                .unwrap()
                .get_str("appName")
                .unwrap(),
            "app@mongos0"
        );
        // Without a name, and on other commands, nothing changes.
        let mut anonymous = doc! { "hello": 1, "client": { "os": {} } };
        assert!(!tag_app_name(&mut anonymous, 0));
        let mut everywhere = doc! { "configureFailPoint": "failCommand", "data": {} };
        assert!(!tag_app_name(&mut everywhere, 0));
        let mut insert = doc! { "insert": "c", "appName": "app" };
        assert!(!tag_app_name(&mut insert, 0));
    }

    #[test]
    fn a_legacy_hello_is_rebuilt_with_its_new_query() {
        let query = doc! { "isMaster": 1, "client": { "application": { "name": "a" } } };
        let raw = RawDocumentBuf::try_from(&query).unwrap();
        let original = anymongo::wire::encode_op_query(5, "admin.$cmd", &raw);
        let (header, body) = split_frame(&original).unwrap();
        let router = Router {
            index: 1,
            transactions: Arc::default(),
        };
        let Routed::Forward { header, body, .. } = router.receive(header, body) else {
            panic!("a hello is forwarded");
        };
        assert_eq!(header.request_id, 5);
        assert_eq!(usize::try_from(header.length).unwrap(), body.len() + 16);
        let tagged = query_document(&body).unwrap();
        let application = tagged.get_document("client").unwrap();
        assert_eq!(
            application
                .get_document("application")
                .unwrap()
                .get_str("name")
                .unwrap(),
            "a@mongos1"
        );
    }

    #[test]
    fn the_uri_lists_as_many_mongoses_as_asked() {
        let cluster = ShardedCluster {
            addresses: vec!["127.0.0.1:1".into(), "127.0.0.1:2".into()],
            acceptors: Vec::new(),
        };
        assert_eq!(cluster.uri(1), "mongodb://127.0.0.1:1/");
        assert_eq!(cluster.uri(2), "mongodb://127.0.0.1:1,127.0.0.1:2/");
        assert_eq!(cluster.uri(0), "mongodb://127.0.0.1:1/");
    }
}
