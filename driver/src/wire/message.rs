//! Dispatch over the opcodes a client can receive.

use bson::RawDocumentBuf;

use super::{op_code, MessageHeader, OpMsg, OpReply, WireError};

/// A decoded server message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// An OP_MSG (2013), the reply to every modern command.
    Msg(OpMsg),
    /// An OP_REPLY (1), the reply to a legacy OP_QUERY handshake.
    Reply(OpReply),
}

impl Message {
    /// Decodes the body of a frame according to `header.op_code`: OP_MSG or OP_REPLY. Any
    /// other opcode fails with [`WireError::UnsupportedOpCode`]; an OP_COMPRESSED (2012) is
    /// first unwrapped with [`decompress_frame`](super::compression::decompress_frame).
    pub fn decode(header: &MessageHeader, body: &[u8]) -> Result<Message, WireError> {
        match header.op_code {
            op_code::MSG => OpMsg::decode(header, body).map(Message::Msg),
            op_code::REPLY => OpReply::decode(header, body).map(Message::Reply),
            other => Err(WireError::UnsupportedOpCode(other)),
        }
    }

    /// The single command-reply document: the OP_MSG body, or the first (for commands, the
    /// only) OP_REPLY document. An OP_REPLY without documents fails with
    /// [`WireError::NoReplyDocument`].
    pub fn into_reply_document(self) -> Result<RawDocumentBuf, WireError> {
        match self {
            Message::Msg(msg) => Ok(msg.body),
            Message::Reply(reply) => reply
                .documents
                .into_iter()
                .next()
                .ok_or(WireError::NoReplyDocument),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{encode_op_query, HEADER_LEN};
    use super::*;
    use bson::rawdoc;

    fn split(frame: &[u8]) -> (MessageHeader, &[u8]) {
        (
            MessageHeader::parse(frame[..HEADER_LEN].try_into().unwrap()),
            &frame[HEADER_LEN..],
        )
    }

    #[test]
    fn dispatches_op_msg() {
        let frame = OpMsg::new(rawdoc! { "ok": 1 }).encode(4, 3);
        let (header, body) = split(&frame);
        let msg = Message::decode(&header, body).unwrap();
        assert!(matches!(msg, Message::Msg(_)));
        assert_eq!(msg.into_reply_document(), Ok(rawdoc! { "ok": 1 }));
    }

    #[test]
    fn dispatches_op_reply() {
        let doc = rawdoc! { "ismaster": true };
        let mut body = vec![0u8; 16];
        body.extend_from_slice(&1i32.to_le_bytes());
        body.extend_from_slice(doc.as_bytes());
        let header = MessageHeader {
            length: (HEADER_LEN + body.len()) as i32,
            request_id: 2,
            response_to: 1,
            op_code: op_code::REPLY,
        };
        let msg = Message::decode(&header, &body).unwrap();
        assert_eq!(msg.into_reply_document(), Ok(doc));
    }

    #[test]
    fn empty_op_reply_has_no_reply_document() {
        let body = vec![0u8; 20];
        let header = MessageHeader {
            length: (HEADER_LEN + body.len()) as i32,
            request_id: 2,
            response_to: 1,
            op_code: op_code::REPLY,
        };
        let msg = Message::decode(&header, &body).unwrap();
        assert_eq!(msg.into_reply_document(), Err(WireError::NoReplyDocument));
    }

    #[test]
    fn other_opcodes_are_unsupported() {
        // An OP_QUERY is a request, and an OP_COMPRESSED must be unwrapped first.
        let frame = encode_op_query(1, "admin.$cmd", &rawdoc! { "isMaster": 1 });
        let (header, body) = split(&frame);
        assert_eq!(
            Message::decode(&header, body),
            Err(WireError::UnsupportedOpCode(op_code::QUERY))
        );
        let header = MessageHeader {
            length: 30,
            request_id: 1,
            response_to: 0,
            op_code: op_code::COMPRESSED,
        };
        assert_eq!(
            Message::decode(&header, &[0; 14]),
            Err(WireError::UnsupportedOpCode(2012))
        );
    }
}
