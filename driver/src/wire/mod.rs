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
mod frame;
mod header;
mod legacy;
mod message;
mod op_msg;
mod validate;

pub use error::WireError;
pub(crate) use frame::grown_len;
pub(crate) use frame::GROWTH_STEP;
pub use frame::{op_code, HEADER_LEN, MAX_MESSAGE_SIZE, MAX_WRITE_BATCH_SIZE};
pub use header::{check_response_to, next_request_id, MessageHeader};
pub use legacy::{encode_op_query, OpReply};
pub use message::Message;
pub use op_msg::{DocumentSequence, MsgFlags, OpMsg};
pub use validate::{validate_document, MAX_DOCUMENT_DEPTH};
