//! The SASL commands every SASL mechanism shares (Authentication spec, "SASL
//! Mechanisms"): `saslStart`, `saslContinue` and the fields of their replies.

use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, Document};

use super::{auth_error, AuthMechanism};
use crate::error::Result;

/// `{saslStart: 1, mechanism, payload}`, plus `options: {skipEmptyExchange: true}`
/// when asked (SCRAM: "Drivers MUST add a top-level options field to the saslStart
/// command").
pub(crate) fn start_command(
    mechanism: AuthMechanism,
    payload: Vec<u8>,
    skip_empty_exchange: bool,
) -> Document {
    let mut command = doc! {
        "saslStart": 1,
        "mechanism": mechanism.name(),
        "payload": binary(payload),
    };
    if skip_empty_exchange {
        command.insert("options", doc! { "skipEmptyExchange": true });
    }
    command
}

/// `{saslContinue: 1, conversationId, payload}`.
pub(crate) fn continue_command(conversation_id: &Bson, payload: Vec<u8>) -> Document {
    doc! {
        "saslContinue": 1,
        "conversationId": conversation_id.clone(),
        "payload": binary(payload),
    }
}

fn binary(bytes: Vec<u8>) -> Binary {
    Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    }
}

/// The fields of a `saslStart` / `saslContinue` reply (or of the hello's
/// `speculativeAuthenticate` for a SASL mechanism).
pub(crate) struct Reply<'a> {
    /// The conversation's identifier, echoed in each `saslContinue`.
    pub(crate) conversation_id: &'a Bson,
    /// The server's message (empty when the reply has none).
    pub(crate) payload: &'a [u8],
    /// Whether the server considers the conversation finished.
    pub(crate) done: bool,
}

impl<'a> Reply<'a> {
    /// Reads a reply of a conversation of `mechanism` against `source`; a missing
    /// `conversationId` or `done`, or a payload that is not binary, is an
    /// authentication error.
    pub(crate) fn parse(
        mechanism: AuthMechanism,
        source: &str,
        reply: &'a Document,
    ) -> Result<Reply<'a>> {
        let error = |message: String| auth_error(mechanism, source, message);
        let conversation_id = reply
            .get("conversationId")
            .ok_or_else(|| error("the server's reply has no conversationId".into()))?;
        let payload = match reply.get("payload") {
            None => &[][..],
            Some(Bson::Binary(binary)) => &binary.bytes[..],
            Some(other) => {
                return Err(error(format!(
                    "the server's payload is a {:?}, not binary data",
                    other.element_type()
                )))
            }
        };
        let done = match reply.get("done") {
            Some(Bson::Boolean(done)) => *done,
            _ => {
                return Err(error(
                    "the server's reply has no boolean 'done' field".into(),
                ))
            }
        };
        Ok(Reply {
            conversation_id,
            payload,
            done,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_need_a_conversation_id_and_done() {
        let mechanism = AuthMechanism::Plain;
        let ok = doc! { "conversationId": 1, "done": true, "payload": binary(b"x".to_vec()) };
        let reply = Reply::parse(mechanism, "$external", &ok).unwrap();
        assert_eq!(
            (reply.conversation_id, reply.payload, reply.done),
            (&Bson::Int32(1), &b"x"[..], true)
        );
        for bad in [
            doc! { "done": true },
            doc! { "conversationId": 1 },
            doc! { "conversationId": 1, "done": 1 },
            doc! { "conversationId": 1, "done": false, "payload": "text" },
        ] {
            assert!(Reply::parse(mechanism, "db", &bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn start_command_carries_the_options_when_asked() {
        let command = start_command(AuthMechanism::ScramSha256, b"n,,".to_vec(), true);
        assert_eq!(
            command.get_document("options").unwrap(),
            &doc! { "skipEmptyExchange": true }
        );
        assert!(!start_command(AuthMechanism::Plain, Vec::new(), false).contains_key("options"));
    }
}
