//! The legacy OP_QUERY (2004) request and OP_REPLY (1) response, kept only for a first
//! legacy-hello (`isMaster`) handshake message to servers that predate OP_MSG handshakes.
//!
//! Layouts (MongoDB wire protocol reference, "Legacy Opcodes"; all integers little-endian):
//!
//! ```c
//! struct OP_QUERY { MsgHeader header; int32 flags; cstring fullCollectionName;
//!                   int32 numberToSkip; int32 numberToReturn; document query; }
//! struct OP_REPLY { MsgHeader header; int32 responseFlags; int64 cursorID;
//!                   int32 startingFrom; int32 numberReturned; document* documents; }
//! ```

use bson::{RawDocument, RawDocumentBuf};

use super::validate::{read_documents, read_i32, DocumentBudget};
use super::{op_code, MessageHeader, WireError, HEADER_LEN};

/// Encodes an OP_QUERY frame for a command such as legacy hello: `flags` 0, `numberToSkip`
/// 0 and `numberToReturn` -1 (a single reply batch, as commands require).
/// `full_collection_name` is `"<db>.$cmd"`, e.g. `"admin.$cmd"`.
///
/// # Panics
///
/// If `full_collection_name` contains a NUL byte (it would end the C string early and corrupt
/// the frame) or the frame would be longer than `i32::MAX` bytes.
pub fn encode_op_query(
    request_id: i32,
    full_collection_name: &str,
    query: &RawDocument,
) -> Vec<u8> {
    assert!(
        !full_collection_name.contains('\0'),
        "OP_QUERY collection name {full_collection_name:?} contains a NUL byte"
    );
    let total = HEADER_LEN + 4 + full_collection_name.len() + 1 + 4 + 4 + query.as_bytes().len();
    let length = i32::try_from(total)
        .unwrap_or_else(|_| panic!("OP_QUERY of {total} bytes exceeds i32::MAX"));
    let mut out = Vec::with_capacity(total);
    MessageHeader {
        length,
        request_id,
        response_to: 0,
        op_code: op_code::QUERY,
    }
    .write_to(&mut out);
    out.extend_from_slice(&0i32.to_le_bytes()); // flags
    out.extend_from_slice(full_collection_name.as_bytes());
    out.push(0);
    out.extend_from_slice(&0i32.to_le_bytes()); // numberToSkip
    out.extend_from_slice(&(-1i32).to_le_bytes()); // numberToReturn
    out.extend_from_slice(query.as_bytes());
    debug_assert_eq!(out.len(), total);
    out
}

/// A decoded OP_REPLY.
#[derive(Debug, Clone, PartialEq)]
pub struct OpReply {
    /// `responseFlags` (bit 0 CursorNotFound, bit 1 QueryFailure, bit 3 AwaitCapable).
    pub response_flags: i32,
    /// `cursorID`; 0 for command replies.
    pub cursor_id: i64,
    /// `startingFrom`: the position of the first document in the cursor.
    pub starting_from: i32,
    /// The returned documents, each validated; their count equals `numberReturned`.
    pub documents: Vec<RawDocumentBuf>,
}

/// `responseFlags` + `cursorID` + `startingFrom` + `numberReturned`.
const REPLY_FIXED_LEN: usize = 4 + 8 + 4 + 4;

impl OpReply {
    /// Decodes the body (everything after the 16-byte header) of a frame whose header was
    /// already parsed and whose `op_code` is 1.
    ///
    /// The body must be exactly `header.length - 16` bytes, hold the 20 bytes of fixed fields,
    /// and then exactly `numberReturned` documents that fill it completely. Each document
    /// length is checked against the remaining bytes before it is sliced, each document is
    /// validated with [`validate_document`](super::validate_document), and the document list
    /// grows only with documents actually present, never from `numberReturned`.
    pub fn decode(header: &MessageHeader, body: &[u8]) -> Result<OpReply, WireError> {
        if header.op_code != op_code::REPLY {
            return Err(WireError::UnsupportedOpCode(header.op_code));
        }
        header.check_body(body)?;
        if body.len() < REPLY_FIXED_LEN {
            return Err(WireError::Truncated("OP_REPLY fixed fields"));
        }
        let response_flags = read_i32(body, "OP_REPLY responseFlags")?;
        let mut cursor = [0u8; 8];
        cursor.copy_from_slice(&body[4..12]);
        let cursor_id = i64::from_le_bytes(cursor);
        let starting_from = read_i32(&body[12..], "OP_REPLY startingFrom")?;
        let number_returned = read_i32(&body[16..], "OP_REPLY numberReturned")?;

        let documents = read_documents(
            &body[REPLY_FIXED_LEN..],
            "OP_REPLY document",
            &mut DocumentBudget::per_message(),
        )?;
        if usize::try_from(number_returned).ok() != Some(documents.len()) {
            return Err(WireError::ReplyCountMismatch {
                declared: number_returned,
                actual: documents.len(),
            });
        }
        Ok(OpReply {
            response_flags,
            cursor_id,
            starting_from,
            documents,
        })
    }

    /// Encodes a whole OP_REPLY frame answering `response_to`: what a server sends, for
    /// test servers that play one.
    pub fn encode(&self, request_id: i32, response_to: i32) -> Vec<u8> {
        let documents_len: usize = self.documents.iter().map(|d| d.as_bytes().len()).sum();
        let total = HEADER_LEN + REPLY_FIXED_LEN + documents_len;
        let mut out = Vec::with_capacity(total);
        MessageHeader {
            length: i32::try_from(total).unwrap_or(i32::MAX),
            request_id,
            response_to,
            op_code: op_code::REPLY,
        }
        .write_to(&mut out);
        out.extend_from_slice(&self.response_flags.to_le_bytes());
        out.extend_from_slice(&self.cursor_id.to_le_bytes());
        out.extend_from_slice(&self.starting_from.to_le_bytes());
        let count = i32::try_from(self.documents.len()).unwrap_or(i32::MAX);
        out.extend_from_slice(&count.to_le_bytes());
        for document in &self.documents {
            out.extend_from_slice(document.as_bytes());
        }
        out
    }

    /// A command reply: one document, no cursor.
    pub fn command_reply(document: RawDocumentBuf) -> OpReply {
        OpReply {
            response_flags: 0,
            cursor_id: 0,
            starting_from: 0,
            documents: vec![document],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn op_query_byte_layout() {
        let query = rawdoc! { "isMaster": 1, "helloOk": true };
        let frame = encode_op_query(0x0102_0304, "admin.$cmd", &query);
        let q = query.as_bytes();
        let mut expected = Vec::new();
        expected.extend_from_slice(&((16 + 4 + 11 + 4 + 4 + q.len()) as i32).to_le_bytes());
        expected.extend_from_slice(&[0x04, 0x03, 0x02, 0x01]); // requestID
        expected.extend_from_slice(&[0, 0, 0, 0]); // responseTo
        expected.extend_from_slice(&[0xd4, 0x07, 0, 0]); // opCode 2004
        expected.extend_from_slice(&[0, 0, 0, 0]); // flags
        expected.extend_from_slice(b"admin.$cmd\0");
        expected.extend_from_slice(&[0, 0, 0, 0]); // numberToSkip
        expected.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]); // numberToReturn -1
        expected.extend_from_slice(q);
        assert_eq!(frame, expected);
        let header = MessageHeader::parse(frame[..16].try_into().unwrap());
        assert_eq!(header.length as usize, frame.len());
        assert_eq!(header.op_code, op_code::QUERY);
    }

    #[test]
    #[should_panic(expected = "NUL")]
    fn op_query_rejects_nul_in_collection_name() {
        let _ = encode_op_query(1, "admin\0.$cmd", &rawdoc! {});
    }

    fn reply_frame(number_returned: i32, docs: &[&RawDocument]) -> (MessageHeader, Vec<u8>) {
        let mut body = Vec::new();
        body.extend_from_slice(&8i32.to_le_bytes()); // AwaitCapable
        body.extend_from_slice(&0x0102_0304_0506_0708i64.to_le_bytes());
        body.extend_from_slice(&3i32.to_le_bytes());
        body.extend_from_slice(&number_returned.to_le_bytes());
        for d in docs {
            body.extend_from_slice(d.as_bytes());
        }
        let header = MessageHeader {
            length: (HEADER_LEN + body.len()) as i32,
            request_id: 99,
            response_to: 5,
            op_code: op_code::REPLY,
        };
        (header, body)
    }

    #[test]
    fn op_reply_decodes() {
        let a = rawdoc! { "ismaster": true, "maxWireVersion": 21 };
        let b = rawdoc! { "ok": 1.0 };
        let (header, body) = reply_frame(2, &[&a, &b]);
        assert_eq!(
            OpReply::decode(&header, &body),
            Ok(OpReply {
                response_flags: 8,
                cursor_id: 0x0102_0304_0506_0708,
                starting_from: 3,
                documents: vec![a, b],
            })
        );
    }

    #[test]
    fn op_reply_truncated_fixed_fields() {
        let (_, body) = reply_frame(0, &[]);
        let short = &body[..19];
        let header = MessageHeader {
            length: (HEADER_LEN + short.len()) as i32,
            request_id: 1,
            response_to: 0,
            op_code: op_code::REPLY,
        };
        assert_eq!(
            OpReply::decode(&header, short),
            Err(WireError::Truncated("OP_REPLY fixed fields"))
        );
    }

    #[test]
    fn op_reply_truncated_document() {
        let a = rawdoc! { "ok": 1 };
        let (_, body) = reply_frame(1, &[&a]);
        let cut = &body[..body.len() - 2];
        let header = MessageHeader {
            length: (HEADER_LEN + cut.len()) as i32,
            request_id: 1,
            response_to: 0,
            op_code: op_code::REPLY,
        };
        assert_eq!(
            OpReply::decode(&header, cut),
            Err(WireError::DocumentLengthOutOfBounds {
                length: a.as_bytes().len() as i32,
                remaining: a.as_bytes().len() - 2
            })
        );
        // Body shorter than the header claims.
        let (header, body) = reply_frame(1, &[&a]);
        assert_eq!(
            OpReply::decode(&header, &body[..body.len() - 1]),
            Err(WireError::LengthMismatch {
                header_length: header.length,
                body_len: body.len() - 1
            })
        );
    }

    #[test]
    fn op_reply_count_must_match() {
        let a = rawdoc! { "ok": 1 };
        for declared in [0, 2, -1, i32::MAX] {
            let (header, body) = reply_frame(declared, &[&a]);
            assert_eq!(
                OpReply::decode(&header, &body),
                Err(WireError::ReplyCountMismatch {
                    declared,
                    actual: 1
                })
            );
        }
    }

    #[test]
    fn op_reply_wrong_opcode() {
        let (mut header, body) = reply_frame(0, &[]);
        header.op_code = op_code::QUERY;
        assert_eq!(
            OpReply::decode(&header, &body),
            Err(WireError::UnsupportedOpCode(op_code::QUERY))
        );
    }

    #[test]
    fn a_reply_of_more_documents_than_a_message_may_hold_is_refused() {
        let empty = RawDocumentBuf::new();
        let docs = vec![empty.as_ref(); 100_001];
        let (header, body) = reply_frame(100_001, &docs);
        assert_eq!(
            OpReply::decode(&header, &body),
            Err(WireError::TooManyDocuments { max: 100_000 })
        );
    }
}
