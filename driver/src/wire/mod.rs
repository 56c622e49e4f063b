//! The MongoDB wire protocol codec: pure, I/O-free encoding and decoding of frames.
//!
//! A connection reads the 16-byte [`MessageHeader`], asks it for
//! [`body_len`](MessageHeader::body_len) (which rejects implausible lengths before any
//! buffer is allocated), reads exactly that many bytes, checks
//! [`check_response_to`], and hands header and body to [`Message::decode`].
//!
//! * [`OpMsg`] implements the OP_MSG spec (`specs/message/OP_MSG.md`): flag bits, one body
//!   section, document sequences, optional CRC-32C checksum.
//! * [`encode_op_query`] and [`OpReply`] implement the legacy OP_QUERY / OP_REPLY pair, used
//!   only for a first legacy-hello handshake message.
//! * [`validate_document`] structurally validates every received document, iteratively.
//! * [`compression`] implements OP_COMPRESSED (`specs/compression/OP_COMPRESSED.md`):
//!   negotiation, the never-compress list, wrapping and unwrapping messages.
//!
//! Nothing here panics on bytes received from the network: every malformed or hostile frame
//! is a [`WireError`], and no allocation is sized from a length field before that field has
//! been checked against the bytes actually present.

pub mod compression;
mod error;
mod header;
mod legacy;
mod message;
mod op_msg;
mod validate;

pub use error::WireError;
pub use header::{check_response_to, next_request_id, MessageHeader};
pub use legacy::{encode_op_query, OpReply};
pub use message::Message;
pub use op_msg::{DocumentSequence, MsgFlags, OpMsg};
pub use validate::{validate_document, MAX_DOCUMENT_DEPTH};

/// Length of the standard message header (`MsgHeader`: four int32s).
pub const HEADER_LEN: usize = 16;

/// Default cap on a message's length before the handshake reports the server's
/// `maxMessageSizeBytes` (whose usual value this is).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 48_000_000;

/// Wire protocol opcodes (the `opCode` header field).
pub mod op_code {
    /// OP_REPLY: reply to a legacy OP_QUERY.
    pub const REPLY: i32 = 1;
    /// OP_QUERY: legacy query, used only for a legacy-hello handshake.
    pub const QUERY: i32 = 2004;
    /// OP_COMPRESSED: a compressed wrapper around another opcode (see [`compression`](super::compression)).
    pub const COMPRESSED: i32 = 2012;
    /// OP_MSG: the extensible message used for all modern commands.
    pub const MSG: i32 = 2013;
}
