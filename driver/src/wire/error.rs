//! The error type of the wire codec.

use std::fmt;

use super::HEADER_LEN;

/// Why a frame could not be encoded or decoded.
///
/// Every malformed or hostile frame maps to one of these variants; the codec never panics on
/// input it received from the network. After any decoding error the connection's byte stream
/// can no longer be trusted and the connection MUST be closed (OP_MSG spec, "sections":
/// "Any unknown Payload Types MUST result in an error and the socket MUST be closed").
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireError {
    /// The header's `messageLength` is smaller than the 16-byte header itself.
    FrameTooShort {
        /// The `messageLength` field as received.
        length: i32,
    },
    /// The header's `messageLength` exceeds the permitted maximum
    /// (`maxMessageSizeBytes` from the handshake, or [`MAX_MESSAGE_SIZE`](super::MAX_MESSAGE_SIZE)).
    FrameTooLarge {
        /// The `messageLength` field as received.
        length: i32,
        /// The maximum that was in force.
        max: usize,
    },
    /// The body handed to a decoder is not `messageLength - 16` bytes long.
    LengthMismatch {
        /// The `messageLength` field of the header.
        header_length: i32,
        /// The number of body bytes actually supplied.
        body_len: usize,
    },
    /// The opcode is not one this codec decodes (or not the one the called decoder handles).
    UnsupportedOpCode(i32),
    /// One or more required flag bits (bits 0-15) that this client does not understand are set
    /// (OP_MSG spec, "flagBits"). Holds only the offending bits.
    UnknownRequiredFlags(u32),
    /// The CRC-32C checksum carried by the frame does not match the bytes received.
    ChecksumMismatch {
        /// The checksum carried at the end of the frame.
        expected: u32,
        /// The checksum computed over the received bytes.
        actual: u32,
    },
    /// The frame ended before the named part could be read completely.
    Truncated(&'static str),
    /// A BSON document failed structural validation; holds the BSON library's description.
    MalformedDocument(String),
    /// A BSON document nests documents, arrays or code-with-scope scopes deeper than allowed.
    DocumentTooDeep {
        /// The depth limit that was exceeded.
        max_depth: usize,
    },
    /// A document's leading int32 length is below the BSON minimum of 5 or larger than the
    /// bytes remaining in its enclosing section or message.
    DocumentLengthOutOfBounds {
        /// The document's declared length.
        length: i32,
        /// The bytes actually left where the document starts.
        remaining: usize,
    },
    /// A kind-1 section's size field is too small to hold its own size and identifier, or
    /// larger than the bytes remaining in the message.
    SectionLengthOutOfBounds {
        /// The section's declared size (which includes the 4-byte size field).
        size: i32,
        /// The bytes actually left where the section's size field starts.
        remaining: usize,
    },
    /// A message holds more documents outside its body (in OP_MSG document sequences, or
    /// as OP_REPLY documents) than one message may: refused before they are all copied.
    TooManyDocuments {
        /// The most documents one message may hold
        /// ([`MAX_WRITE_BATCH_SIZE`](super::MAX_WRITE_BATCH_SIZE)).
        max: usize,
    },
    /// The OP_MSG has no kind-0 (body) section.
    MissingBody,
    /// The OP_MSG has more than one kind-0 (body) section.
    DuplicateBody,
    /// Two kind-1 sections of one OP_MSG share an identifier (OP_MSG spec, "sections":
    /// "each identifier MUST be unique per message").
    DuplicateSequenceIdentifier(String),
    /// A document sequence identifier is not valid UTF-8 (decoding) or contains a NUL byte
    /// (encoding). Holds the identifier, lossily converted.
    InvalidSequenceIdentifier(String),
    /// A section's payload type byte is neither 0 nor 1.
    UnknownSectionKind(u8),
    /// An OP_REPLY's `numberReturned` disagrees with the documents actually present.
    ReplyCountMismatch {
        /// The `numberReturned` field.
        declared: i32,
        /// The number of documents found in the body.
        actual: usize,
    },
    /// An OP_REPLY carried no document where a command reply was expected.
    NoReplyDocument,
    /// A reply's `responseTo` is not the `requestID` of the request it should answer.
    ResponseToMismatch {
        /// The `requestID` of the request that was sent.
        expected: i32,
        /// The `responseTo` of the reply received.
        actual: i32,
    },
    /// A reply sets `moreToCome` though its request did not set `exhaustAllowed`: the
    /// server "will never produce replies with the `moreToCome` bit set unless the
    /// request has the `exhaustAllowed` bit set" (OP_MSG spec, "exhaustAllowed"), so
    /// more replies would follow that no request is waiting for.
    UnexpectedMoreToCome,
    /// A message to be encoded would exceed the permitted maximum size.
    MessageTooLarge {
        /// The encoded length the message would have.
        length: usize,
        /// The maximum that was in force.
        max: usize,
    },
    /// An OP_COMPRESSED names a `compressorId` this client does not know (OP_COMPRESSED
    /// spec, "Compressor IDs": 4-255 are reserved).
    UnknownCompressor(u8),
    /// An OP_COMPRESSED declares an `uncompressedSize` that is negative or makes the
    /// message larger than the permitted maximum; refused before anything is allocated.
    UncompressedSizeOutOfBounds {
        /// The `uncompressedSize` field as received.
        size: i32,
        /// The largest uncompressed body the maximum message size permits.
        max: usize,
    },
    /// An OP_COMPRESSED body does not decompress to exactly its declared `uncompressedSize`.
    UncompressedSizeMismatch {
        /// The `uncompressedSize` field.
        declared: usize,
    },
    /// An OP_COMPRESSED body could not be decompressed (corrupt or truncated data).
    Decompression {
        /// The compressor named by the message.
        compressor: &'static str,
        /// The decoder's description of the failure.
        message: String,
    },
    /// A message could not be compressed.
    Compression {
        /// The compressor in use.
        compressor: &'static str,
        /// The encoder's description of the failure.
        message: String,
    },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::FrameTooShort { length } => write!(
                f,
                "wire message length {length} is shorter than the {HEADER_LEN}-byte message header"
            ),
            WireError::FrameTooLarge { length, max } => write!(
                f,
                "wire message length {length} exceeds the maximum message size of {max} bytes"
            ),
            WireError::LengthMismatch {
                header_length,
                body_len,
            } => write!(
                f,
                "wire message header declares {header_length} bytes but {body_len} body bytes \
                 (plus the {HEADER_LEN}-byte header) were supplied"
            ),
            WireError::UnsupportedOpCode(op) => write!(f, "unsupported wire opcode {op}"),
            WireError::UnknownRequiredFlags(bits) => write!(
                f,
                "OP_MSG sets unknown required flag bits {bits:#06x}; the message cannot be processed"
            ),
            WireError::ChecksumMismatch { expected, actual } => write!(
                f,
                "OP_MSG checksum mismatch: the message carries CRC-32C {expected:#010x} but its \
                 bytes hash to {actual:#010x}"
            ),
            WireError::Truncated(what) => write!(f, "wire message truncated: {what} is incomplete"),
            WireError::MalformedDocument(msg) => write!(f, "malformed BSON document: {msg}"),
            WireError::DocumentTooDeep { max_depth } => write!(
                f,
                "BSON document nests deeper than the limit of {max_depth} levels"
            ),
            WireError::DocumentLengthOutOfBounds { length, remaining } => write!(
                f,
                "BSON document declares length {length} but only {remaining} bytes remain \
                 (and at least 5 are required)"
            ),
            WireError::SectionLengthOutOfBounds { size, remaining } => write!(
                f,
                "OP_MSG document sequence declares size {size} but only {remaining} bytes remain \
                 (and at least 5 are required)"
            ),
            WireError::MissingBody => write!(f, "OP_MSG has no body (kind 0) section"),
            WireError::DuplicateBody => write!(f, "OP_MSG has more than one body (kind 0) section"),
            WireError::DuplicateSequenceIdentifier(id) => write!(
                f,
                "OP_MSG has more than one document sequence named {id:?}"
            ),
            WireError::InvalidSequenceIdentifier(id) => write!(
                f,
                "OP_MSG document sequence identifier {id:?} is not a valid C string"
            ),
            WireError::UnknownSectionKind(kind) => {
                write!(f, "OP_MSG section has unknown payload type {kind}")
            }
            WireError::ReplyCountMismatch { declared, actual } => write!(
                f,
                "OP_REPLY declares {declared} documents but contains {actual}"
            ),
            WireError::NoReplyDocument => write!(f, "OP_REPLY contains no reply document"),
            WireError::ResponseToMismatch { expected, actual } => write!(
                f,
                "reply answers request {actual} but request {expected} was expected"
            ),
            WireError::UnexpectedMoreToCome => write!(
                f,
                "OP_MSG reply sets moreToCome, but its request did not allow more than one reply \
                 (exhaustAllowed)"
            ),
            WireError::MessageTooLarge { length, max } => write!(
                f,
                "encoded message would be {length} bytes, more than the maximum of {max}"
            ),
            WireError::UnknownCompressor(id) => {
                write!(f, "OP_COMPRESSED uses unknown compressor id {id}")
            }
            WireError::UncompressedSizeOutOfBounds { size, max } => write!(
                f,
                "OP_COMPRESSED declares an uncompressed size of {size} bytes, outside 0 to the \
                 maximum of {max}"
            ),
            WireError::TooManyDocuments { max } => write!(
                f,
                "wire message holds more than {max} documents outside its body (document \
                 sequences or OP_REPLY documents)"
            ),
            WireError::UncompressedSizeMismatch { declared } => write!(
                f,
                "OP_COMPRESSED body does not decompress to its declared size of {declared} bytes"
            ),
            WireError::Decompression {
                compressor,
                message,
            } => write!(f, "OP_COMPRESSED body is not valid {compressor} data: {message}"),
            WireError::Compression {
                compressor,
                message,
            } => write!(f, "message could not be compressed with {compressor}: {message}"),
        }
    }
}

impl std::error::Error for WireError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_the_numbers() {
        let e = WireError::FrameTooLarge {
            length: 50_000_000,
            max: 48_000_000,
        };
        let text = e.to_string();
        assert!(
            text.contains("50000000") && text.contains("48000000"),
            "{text}"
        );

        let e = WireError::ChecksumMismatch {
            expected: 0xdead_beef,
            actual: 1,
        };
        assert_eq!(
            e.to_string(),
            "OP_MSG checksum mismatch: the message carries CRC-32C 0xdeadbeef but its bytes hash \
             to 0x00000001"
        );
    }

    #[test]
    fn is_a_std_error() {
        let e: Box<dyn std::error::Error + Send + Sync> = Box::new(WireError::MissingBody);
        assert_eq!(e.to_string(), "OP_MSG has no body (kind 0) section");
    }
}
