//! OP_MSG (opcode 2013): the message every command and reply uses
//! (OP_MSG spec, "OP_MSG").

use std::collections::BTreeSet;
use std::ops::{BitOr, BitOrAssign};

use bson::RawDocumentBuf;

use super::validate::{
    malformed, read_document, read_documents, read_i32, validate_document, DocumentBudget,
    MAX_DOCUMENT_DEPTH,
};
use super::{op_code, MessageHeader, WireError, HEADER_LEN};

/// The `flagBits` of an OP_MSG (OP_MSG spec, "flagBits").
///
/// Bits 0-15 are *required*: a receiver must fail on any it does not understand. Bits 16-31
/// are *optional* and ignored when unknown. Decoding keeps all bits as received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MsgFlags(pub u32);

impl MsgFlags {
    /// Bit 0, `checksumPresent`: a CRC-32C of the message follows the last section.
    pub const CHECKSUM_PRESENT: MsgFlags = MsgFlags(1 << 0);
    /// Bit 1, `moreToCome`: the sender will send another message without waiting
    /// (requests: no reply is wanted; replies: more replies follow).
    pub const MORE_TO_COME: MsgFlags = MsgFlags(1 << 1);
    /// Bit 16, `exhaustAllowed` (requests only): the client accepts several replies flagged
    /// `moreToCome`.
    pub const EXHAUST_ALLOWED: MsgFlags = MsgFlags(1 << 16);

    /// The required bits (0-15).
    const REQUIRED_MASK: u32 = 0xffff;
    /// The required bits this codec understands.
    const KNOWN_REQUIRED: u32 = Self::CHECKSUM_PRESENT.0 | Self::MORE_TO_COME.0;

    /// No flags set.
    pub const fn empty() -> MsgFlags {
        MsgFlags(0)
    }

    /// The raw bit vector.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Whether every bit of `other` is set in `self`.
    pub const fn contains(self, other: MsgFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Sets every bit of `other`.
    pub fn insert(&mut self, other: MsgFlags) {
        self.0 |= other.0;
    }

    /// Clears every bit of `other`.
    pub fn remove(&mut self, other: MsgFlags) {
        self.0 &= !other.0;
    }

    /// The set required bits (0-15) this codec does not understand; must be 0 for a message
    /// to be processed (OP_MSG spec: "Clients MUST error if any unsupported or undefined
    /// required bits are set to 1 and MUST ignore all undefined optional bits").
    pub const fn unknown_required(self) -> u32 {
        self.0 & Self::REQUIRED_MASK & !Self::KNOWN_REQUIRED
    }
}

impl BitOr for MsgFlags {
    type Output = MsgFlags;
    fn bitor(self, rhs: MsgFlags) -> MsgFlags {
        MsgFlags(self.0 | rhs.0)
    }
}

impl BitOrAssign for MsgFlags {
    fn bitor_assign(&mut self, rhs: MsgFlags) {
        self.0 |= rhs.0;
    }
}

/// A kind-1 section: a named run of documents, such as the `documents` of an `insert`,
/// sent outside the body instead of as a BSON array (OP_MSG spec, "Command Arguments As
/// Payload").
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentSequence {
    /// The command argument the documents belong to. Must not contain a NUL byte and must be
    /// unique within one message.
    pub identifier: String,
    /// The documents, in order; may be empty.
    pub documents: Vec<RawDocumentBuf>,
}

impl DocumentSequence {
    /// A sequence named `identifier` holding `documents`.
    pub fn new(identifier: impl Into<String>, documents: Vec<RawDocumentBuf>) -> DocumentSequence {
        DocumentSequence {
            identifier: identifier.into(),
            documents,
        }
    }

    /// The encoded size of this section's payload: the int32 size field itself, the
    /// identifier's C string and the documents (the payload-type byte is not included).
    fn payload_len(&self) -> usize {
        4 + self.identifier.len()
            + 1
            + self
                .documents
                .iter()
                .map(|d| d.as_bytes().len())
                .sum::<usize>()
    }
}

/// An OP_MSG: flags, exactly one body document (kind-0 section) and any number of document
/// sequences (kind-1 sections).
#[derive(Debug, Clone, PartialEq)]
pub struct OpMsg {
    /// The message's `flagBits`.
    pub flags: MsgFlags,
    /// The kind-0 section: the command or the reply.
    pub body: RawDocumentBuf,
    /// The kind-1 sections, in wire order.
    pub sequences: Vec<DocumentSequence>,
}

impl OpMsg {
    /// A message with no flags and no document sequences.
    pub fn new(body: RawDocumentBuf) -> OpMsg {
        OpMsg {
            flags: MsgFlags::empty(),
            body,
            sequences: Vec::new(),
        }
    }

    /// The number of bytes [`encode`](Self::encode) will produce, header and checksum
    /// included. Lets a caller compare against `maxMessageSizeBytes` before encoding.
    pub fn encoded_len(&self) -> usize {
        let checksum = if self.flags.contains(MsgFlags::CHECKSUM_PRESENT) {
            4
        } else {
            0
        };
        HEADER_LEN
            + 4
            + 1
            + self.body.as_bytes().len()
            + self
                .sequences
                .iter()
                .map(|s| 1 + s.payload_len())
                .sum::<usize>()
            + checksum
    }

    /// Encodes the whole frame, header included, with `op_code` 2013. The body goes first,
    /// then the sequences in order. When `flags` contain
    /// [`CHECKSUM_PRESENT`](MsgFlags::CHECKSUM_PRESENT), a CRC-32C of everything before it
    /// (header included) is appended.
    ///
    /// # Panics
    ///
    /// If a sequence identifier contains a NUL byte or a sequence or the whole message is
    /// longer than `i32::MAX` bytes: either would produce a corrupt frame. Use
    /// [`try_encode`](Self::try_encode) to get an error instead.
    pub fn encode(&self, request_id: i32, response_to: i32) -> Vec<u8> {
        match self.try_encode(request_id, response_to, i32::MAX as usize) {
            Ok(bytes) => bytes,
            Err(e) => panic!("cannot encode OP_MSG: {e}"),
        }
    }

    /// Like [`encode`](Self::encode), but fails with
    /// [`WireError::InvalidSequenceIdentifier`] for an identifier containing a NUL byte and
    /// with [`WireError::MessageTooLarge`] when the frame would exceed `max_message_size`
    /// (clamped to `i32::MAX`; pass the server's `maxMessageSizeBytes`).
    pub fn try_encode(
        &self,
        request_id: i32,
        response_to: i32,
        max_message_size: usize,
    ) -> Result<Vec<u8>, WireError> {
        if let Some(bad) = self.sequences.iter().find(|s| s.identifier.contains('\0')) {
            return Err(WireError::InvalidSequenceIdentifier(bad.identifier.clone()));
        }
        let max = max_message_size.min(i32::MAX as usize);
        let total = self.encoded_len();
        let length = i32::try_from(total)
            .ok()
            .filter(|_| total <= max)
            .ok_or(WireError::MessageTooLarge { length: total, max })?;

        let mut out = Vec::with_capacity(total);
        MessageHeader {
            length,
            request_id,
            response_to,
            op_code: op_code::MSG,
        }
        .write_to(&mut out);
        out.extend_from_slice(&self.flags.0.to_le_bytes());
        out.push(0);
        out.extend_from_slice(self.body.as_bytes());
        for seq in &self.sequences {
            out.push(1);
            // Fits: the section is part of a frame whose length fits in an i32.
            let size = seq.payload_len() as i32;
            out.extend_from_slice(&size.to_le_bytes());
            out.extend_from_slice(seq.identifier.as_bytes());
            out.push(0);
            for doc in &seq.documents {
                out.extend_from_slice(doc.as_bytes());
            }
        }
        if self.flags.contains(MsgFlags::CHECKSUM_PRESENT) {
            let crc = crc32c::crc32c(&out);
            out.extend_from_slice(&crc.to_le_bytes());
        }
        debug_assert_eq!(out.len(), total);
        Ok(out)
    }

    /// Decodes the body (everything after the 16-byte header) of a frame whose header was
    /// already parsed and whose `op_code` is 2013.
    ///
    /// Checks, in order: the body is exactly `header.length - 16` bytes; no unknown required
    /// flag bit is set (optional bits 16-31 are ignored); the checksum, when
    /// `checksumPresent` is set, matches a CRC-32C over the header (rebuilt from `header`)
    /// and the sections; then every section: exactly one kind 0, any number of kind 1 with
    /// unique identifiers and sizes that add up exactly, no other kind. Every length field is
    /// checked against the bytes actually present before anything is sliced or copied, and
    /// every document is checked with [`validate_document`](super::validate_document).
    pub fn decode(header: &MessageHeader, body: &[u8]) -> Result<OpMsg, WireError> {
        if header.op_code != op_code::MSG {
            return Err(WireError::UnsupportedOpCode(header.op_code));
        }
        header.check_body(body)?;

        let flags = MsgFlags(read_i32(body, "OP_MSG flagBits")? as u32);
        let unknown = flags.unknown_required();
        if unknown != 0 {
            return Err(WireError::UnknownRequiredFlags(unknown));
        }

        let mut sections_end = body.len();
        if flags.contains(MsgFlags::CHECKSUM_PRESENT) {
            sections_end = body
                .len()
                .checked_sub(4)
                .filter(|&end| end >= 4)
                .ok_or(WireError::Truncated("OP_MSG checksum"))?;
            let carried = read_i32(&body[sections_end..], "OP_MSG checksum")? as u32;
            let computed =
                crc32c::crc32c_append(crc32c::crc32c(&header.to_bytes()), &body[..sections_end]);
            if carried != computed {
                return Err(WireError::ChecksumMismatch {
                    expected: carried,
                    actual: computed,
                });
            }
        }

        let mut rest = &body[4..sections_end];
        let mut msg_body: Option<RawDocumentBuf> = None;
        let mut sequences: Vec<DocumentSequence> = Vec::new();
        let mut identifiers: BTreeSet<String> = BTreeSet::new();
        // Shared by all the sequences: the bound is on the message.
        let mut budget = DocumentBudget::per_message();
        // The OP_MSG spec's `Section+`: at least one section.
        if rest.is_empty() {
            return Err(WireError::Truncated("OP_MSG sections"));
        }
        while let Some((&kind, after_kind)) = rest.split_first() {
            match kind {
                0 => {
                    if msg_body.is_some() {
                        return Err(WireError::DuplicateBody);
                    }
                    let (doc, used) = read_document(after_kind, "OP_MSG body document")?;
                    msg_body = Some(doc);
                    rest = &after_kind[used..];
                }
                1 => {
                    let (seq, used) = read_sequence(after_kind, &mut budget)?;
                    if !identifiers.insert(seq.identifier.clone()) {
                        return Err(WireError::DuplicateSequenceIdentifier(seq.identifier));
                    }
                    sequences.push(seq);
                    rest = &after_kind[used..];
                }
                other => return Err(WireError::UnknownSectionKind(other)),
            }
        }

        Ok(OpMsg {
            flags,
            body: msg_body.ok_or(WireError::MissingBody)?,
            sequences,
        })
    }
}

impl OpMsg {
    /// The length of [`decode_parts`](Self::decode_parts)'s `head`: the flag bits and the
    /// first section's kind byte.
    pub const HEAD_LEN: usize = 5;

    /// [`decode`](Self::decode) of a body read in two parts: its first
    /// [`HEAD_LEN`](Self::HEAD_LEN) bytes, and the rest. When the rest is exactly one body
    /// document (section kind 0, no checksum, no other section: how servers reply), that
    /// vector becomes the body as it is; a large reply (a batch of a find) is then neither
    /// copied nor held twice. Anything else is joined and decoded by `decode`, so the
    /// outcome is always `decode`'s.
    pub fn decode_parts(
        header: &MessageHeader,
        head: [u8; Self::HEAD_LEN],
        rest: Vec<u8>,
    ) -> Result<OpMsg, WireError> {
        let [f0, f1, f2, f3, kind] = head;
        let flags = MsgFlags(u32::from_le_bytes([f0, f1, f2, f3]));
        let body_alone = header.op_code == op_code::MSG
            && kind == 0
            && flags.unknown_required() == 0
            && !flags.contains(MsgFlags::CHECKSUM_PRESENT)
            && read_i32(&rest, "OP_MSG body document")
                .ok()
                .and_then(|length| usize::try_from(length).ok())
                .filter(|&length| length >= 5)
                == Some(rest.len());
        if !body_alone {
            let mut body = Vec::with_capacity(head.len() + rest.len());
            body.extend_from_slice(&head);
            body.extend_from_slice(&rest);
            return OpMsg::decode(header, &body);
        }
        // `decode`'s checks, in its order, for this shape.
        let expected = usize::try_from(header.length)
            .ok()
            .and_then(|length| length.checked_sub(HEADER_LEN + head.len()));
        if expected != Some(rest.len()) {
            return Err(WireError::LengthMismatch {
                header_length: header.length,
                body_len: head.len() + rest.len(),
            });
        }
        let body = RawDocumentBuf::from_bytes(rest).map_err(malformed)?;
        validate_document(&body, MAX_DOCUMENT_DEPTH)?;
        Ok(OpMsg {
            flags,
            body,
            sequences: Vec::new(),
        })
    }
}

/// Reads a kind-1 payload from the start of `bytes` (just after the payload-type byte).
/// Returns the sequence and the bytes it occupied (its declared size); its documents
/// count against the message's `budget`.
fn read_sequence(
    bytes: &[u8],
    budget: &mut DocumentBudget,
) -> Result<(DocumentSequence, usize), WireError> {
    let size = read_i32(bytes, "OP_MSG document sequence size")?;
    // The smallest payload is the size field plus an empty identifier's NUL.
    let len = usize::try_from(size)
        .ok()
        .filter(|&n| n >= 5 && n <= bytes.len())
        .ok_or(WireError::SectionLengthOutOfBounds {
            size,
            remaining: bytes.len(),
        })?;
    let section = &bytes[4..len];
    let nul = section
        .iter()
        .position(|&b| b == 0)
        .ok_or(WireError::Truncated("OP_MSG document sequence identifier"))?;
    let identifier = std::str::from_utf8(&section[..nul])
        .map_err(|_| {
            WireError::InvalidSequenceIdentifier(
                String::from_utf8_lossy(&section[..nul]).into_owned(),
            )
        })?
        .to_owned();
    let documents = read_documents(
        &section[nul + 1..],
        "OP_MSG document sequence document",
        budget,
    )?;
    Ok((
        DocumentSequence {
            identifier,
            documents,
        },
        len,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn split(frame: &[u8]) -> (MessageHeader, &[u8]) {
        let header = MessageHeader::parse(frame[..HEADER_LEN].try_into().unwrap());
        assert_eq!(header.length as usize, frame.len());
        (header, &frame[HEADER_LEN..])
    }

    fn decode(frame: &[u8]) -> Result<OpMsg, WireError> {
        let (header, body) = split(frame);
        OpMsg::decode(&header, body)
    }

    /// Builds a frame from a raw body, with a correct header.
    fn frame_from_body(body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        MessageHeader {
            length: (HEADER_LEN + body.len()) as i32,
            request_id: 7,
            response_to: 0,
            op_code: op_code::MSG,
        }
        .write_to(&mut out);
        out.extend_from_slice(body);
        out
    }

    fn ping() -> RawDocumentBuf {
        rawdoc! { "ping": 1, "$db": "admin" }
    }

    fn two_sequences() -> OpMsg {
        OpMsg {
            flags: MsgFlags::empty(),
            body: rawdoc! { "insert": "c", "$db": "d" },
            sequences: vec![
                DocumentSequence::new(
                    "documents",
                    vec![rawdoc! { "_id": 1 }, rawdoc! { "_id": 2, "x": "y" }],
                ),
                DocumentSequence::new("empty", vec![]),
            ],
        }
    }

    #[test]
    fn round_trip_body_only() {
        let msg = OpMsg::new(ping());
        let frame = msg.encode(42, 0);
        assert_eq!(frame.len(), msg.encoded_len());
        let (header, body) = split(&frame);
        assert_eq!(
            header,
            MessageHeader {
                length: frame.len() as i32,
                request_id: 42,
                response_to: 0,
                op_code: op_code::MSG
            }
        );
        // flags 0, then kind 0, then the document verbatim.
        assert_eq!(&body[..5], &[0, 0, 0, 0, 0]);
        assert_eq!(&body[5..], ping().as_bytes());
        assert_eq!(OpMsg::decode(&header, body), Ok(msg));
    }

    #[test]
    fn round_trip_body_and_two_sequences() {
        let msg = two_sequences();
        let frame = msg.encode(1, 2);
        assert_eq!(frame.len(), msg.encoded_len());
        let decoded = decode(&frame).unwrap();
        assert_eq!(decoded.sequences.len(), 2);
        assert_eq!(decoded.sequences[0].identifier, "documents");
        assert_eq!(
            decoded.sequences[0].documents[1],
            rawdoc! { "_id": 2, "x": "y" }
        );
        assert!(decoded.sequences[1].documents.is_empty());
        assert_eq!(decoded, msg);
    }

    #[test]
    fn sequence_before_body_is_accepted() {
        // "A section with payload type 1 can be serialized before payload type 0."
        let doc = rawdoc! { "a": 1 };
        let mut body = vec![0, 0, 0, 0, 1];
        body.extend_from_slice(&(4 + 2 + doc.as_bytes().len() as i32).to_le_bytes());
        body.extend_from_slice(b"s\0");
        body.extend_from_slice(doc.as_bytes());
        body.push(0);
        body.extend_from_slice(ping().as_bytes());
        let msg = decode(&frame_from_body(&body)).unwrap();
        assert_eq!(msg.body, ping());
        assert_eq!(msg.sequences, vec![DocumentSequence::new("s", vec![doc])]);
    }

    #[test]
    fn flags_are_preserved() {
        let mut msg = two_sequences();
        msg.flags = MsgFlags::MORE_TO_COME | MsgFlags::EXHAUST_ALLOWED | MsgFlags(1 << 31);
        let frame = msg.encode(3, 0);
        assert_eq!(&frame[16..20], &[2, 0, 1, 0x80]);
        let decoded = decode(&frame).unwrap();
        assert_eq!(decoded.flags, msg.flags);
        assert!(decoded.flags.contains(MsgFlags::EXHAUST_ALLOWED));
        assert!(!decoded.flags.contains(MsgFlags::CHECKSUM_PRESENT));
    }

    #[test]
    fn flag_helpers() {
        let mut f = MsgFlags::default();
        f.insert(MsgFlags::CHECKSUM_PRESENT);
        f |= MsgFlags::MORE_TO_COME;
        assert_eq!(f.bits(), 3);
        assert!(f.contains(MsgFlags::CHECKSUM_PRESENT | MsgFlags::MORE_TO_COME));
        f.remove(MsgFlags::CHECKSUM_PRESENT);
        assert_eq!(f, MsgFlags::MORE_TO_COME);
        assert_eq!(MsgFlags(0xffff_ffff).unknown_required(), 0xfffc);
    }

    #[test]
    fn checksum_good_decodes() {
        let mut msg = two_sequences();
        msg.flags = MsgFlags::CHECKSUM_PRESENT;
        let frame = msg.encode(9, 8);
        assert_eq!(frame.len(), msg.encoded_len());
        let n = frame.len();
        let carried = u32::from_le_bytes(frame[n - 4..].try_into().unwrap());
        assert_eq!(carried, crc32c::crc32c(&frame[..n - 4]));
        assert_eq!(decode(&frame), Ok(msg));
    }

    #[test]
    fn checksum_known_vector() {
        // CRC-32C("123456789") = 0xE3069283: make sure the right polynomial is in use.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn checksum_bad_is_rejected() {
        let mut msg = OpMsg::new(ping());
        msg.flags = MsgFlags::CHECKSUM_PRESENT;
        let good = msg.encode(9, 8);
        let n = good.len();
        let carried = u32::from_le_bytes(good[n - 4..].try_into().unwrap());

        // Corrupt one body byte: the carried checksum no longer matches.
        let mut bad = good.clone();
        bad[n - 6] ^= 0x01;
        assert_eq!(
            decode(&bad),
            Err(WireError::ChecksumMismatch {
                expected: carried,
                actual: crc32c::crc32c(&bad[..n - 4])
            })
        );

        // The header is covered too: change the request id.
        let (mut header, body) = split(&good);
        header.request_id = 10;
        assert!(matches!(
            OpMsg::decode(&header, body),
            Err(WireError::ChecksumMismatch { .. })
        ));
    }

    #[test]
    fn checksum_flag_without_room_is_truncated() {
        // flags with checksumPresent and only 2 more bytes.
        let body = [1, 0, 0, 0, 0, 0];
        assert_eq!(
            decode(&frame_from_body(&body)),
            Err(WireError::Truncated("OP_MSG checksum"))
        );
    }

    #[test]
    fn truncated_frame_is_rejected() {
        let frame = OpMsg::new(ping()).encode(1, 0);
        let (header, body) = split(&frame);
        // Fewer body bytes than the header promised.
        assert_eq!(
            OpMsg::decode(&header, &body[..body.len() - 1]),
            Err(WireError::LengthMismatch {
                header_length: header.length,
                body_len: body.len() - 1
            })
        );
        // A frame cut to its flags: no section at all.
        assert_eq!(
            decode(&frame_from_body(&[0, 0, 0, 0])),
            Err(WireError::Truncated("OP_MSG sections"))
        );
        // A frame cut inside its flags.
        assert_eq!(
            decode(&frame_from_body(&[0, 0])),
            Err(WireError::Truncated("OP_MSG flagBits"))
        );
    }

    #[test]
    fn truncated_document_is_rejected() {
        let frame = OpMsg::new(ping()).encode(1, 0);
        // Keep the body's declared length but cut the frame (and fix the header) so the
        // document's length field exceeds what remains.
        let cut = &frame[HEADER_LEN..frame.len() - 3];
        let remaining = cut.len() - 5;
        assert_eq!(
            decode(&frame_from_body(cut)),
            Err(WireError::DocumentLengthOutOfBounds {
                length: ping().as_bytes().len() as i32,
                remaining
            })
        );
        // Cut inside the document's own length field.
        assert_eq!(
            decode(&frame_from_body(&[0, 0, 0, 0, 0, 9, 0])),
            Err(WireError::Truncated("OP_MSG body document"))
        );
    }

    #[test]
    fn document_length_larger_than_remaining_is_rejected() {
        let mut body = vec![0, 0, 0, 0, 0];
        body.extend_from_slice(&0x7fff_0000i32.to_le_bytes());
        body.extend_from_slice(&[0x10, b'a', 0, 1, 0, 0, 0, 0]);
        assert_eq!(
            decode(&frame_from_body(&body)),
            Err(WireError::DocumentLengthOutOfBounds {
                length: 0x7fff_0000,
                remaining: 12
            })
        );
    }

    #[test]
    fn truncated_section_is_rejected() {
        let msg = two_sequences();
        let frame = msg.encode(1, 0);
        // Drop the last byte: the final (empty) sequence's size field claims one more byte
        // than remains.
        let body = &frame[HEADER_LEN..frame.len() - 1];
        assert_eq!(
            decode(&frame_from_body(body)),
            Err(WireError::SectionLengthOutOfBounds {
                size: 4 + 6,
                remaining: 9
            })
        );
        // A sequence whose size field itself is cut short.
        let mut body = frame[HEADER_LEN..].to_vec();
        body.extend_from_slice(&[1, 5, 0]);
        assert_eq!(
            decode(&frame_from_body(&body)),
            Err(WireError::Truncated("OP_MSG document sequence size"))
        );
    }

    #[test]
    fn sequence_sizes_not_adding_up_are_rejected() {
        let doc = rawdoc! { "a": 1 };
        let doc_len = doc.as_bytes().len();
        let build = |size: i32| {
            let mut body = vec![0, 0, 0, 0, 0];
            body.extend_from_slice(ping().as_bytes());
            body.push(1);
            body.extend_from_slice(&size.to_le_bytes());
            body.extend_from_slice(b"docs\0");
            body.extend_from_slice(doc.as_bytes());
            body.extend_from_slice(doc.as_bytes());
            frame_from_body(&body)
        };
        let exact = (4 + 5 + 2 * doc_len) as i32;
        assert_eq!(
            decode(&build(exact)).unwrap().sequences[0].documents.len(),
            2
        );

        // Size ends inside the second document: that document overruns its section.
        assert_eq!(
            decode(&build(exact - 3)),
            Err(WireError::DocumentLengthOutOfBounds {
                length: doc_len as i32,
                remaining: doc_len - 3
            })
        );
        // Size leaves only 2 bytes of the second document: too short for its length field.
        assert_eq!(
            decode(&build((4 + 5 + doc_len + 2) as i32)),
            Err(WireError::Truncated("OP_MSG document sequence document"))
        );
        // Size larger than the rest of the message.
        assert_eq!(
            decode(&build(exact + 1)),
            Err(WireError::SectionLengthOutOfBounds {
                size: exact + 1,
                remaining: exact as usize
            })
        );
        // Size smaller than its own field.
        assert_eq!(
            decode(&build(3)),
            Err(WireError::SectionLengthOutOfBounds {
                size: 3,
                remaining: exact as usize
            })
        );
        // Size leaving no room for the identifier's terminator.
        assert_eq!(
            decode(&build(7)),
            Err(WireError::Truncated("OP_MSG document sequence identifier"))
        );
    }

    #[test]
    fn unknown_required_flag_bit_is_rejected() {
        for bit in [2u32, 7, 15] {
            let mut msg = OpMsg::new(ping());
            msg.flags = MsgFlags(1 << bit) | MsgFlags::MORE_TO_COME;
            assert_eq!(
                decode(&msg.encode(1, 0)),
                Err(WireError::UnknownRequiredFlags(1 << bit))
            );
        }
    }

    #[test]
    fn unknown_optional_flag_bit_is_ignored() {
        let mut msg = OpMsg::new(ping());
        msg.flags = MsgFlags(1 << 17 | 1 << 30);
        let decoded = decode(&msg.encode(1, 0)).unwrap();
        assert_eq!(decoded.flags.bits(), 1 << 17 | 1 << 30);
        assert_eq!(decoded.body, ping());
    }

    #[test]
    fn missing_body_is_rejected() {
        let mut msg = OpMsg::new(ping());
        msg.sequences
            .push(DocumentSequence::new("documents", vec![rawdoc! {}]));
        let frame = msg.encode(1, 0);
        // Remove the kind-0 section, keep flags and the sequence.
        let body_len = ping().as_bytes().len();
        let mut body = frame[HEADER_LEN..HEADER_LEN + 4].to_vec();
        body.extend_from_slice(&frame[HEADER_LEN + 5 + body_len..]);
        assert_eq!(decode(&frame_from_body(&body)), Err(WireError::MissingBody));
    }

    #[test]
    fn two_bodies_are_rejected() {
        let mut body = vec![0, 0, 0, 0, 0];
        body.extend_from_slice(ping().as_bytes());
        body.push(0);
        body.extend_from_slice(ping().as_bytes());
        assert_eq!(
            decode(&frame_from_body(&body)),
            Err(WireError::DuplicateBody)
        );
    }

    #[test]
    fn duplicate_sequence_identifier_is_rejected() {
        let mut msg = OpMsg::new(ping());
        msg.sequences
            .push(DocumentSequence::new("documents", vec![]));
        msg.sequences
            .push(DocumentSequence::new("documents", vec![]));
        assert_eq!(
            decode(&msg.encode(1, 0)),
            Err(WireError::DuplicateSequenceIdentifier("documents".into()))
        );
    }

    #[test]
    fn non_utf8_identifier_is_rejected() {
        let mut body = vec![0, 0, 0, 0, 0];
        body.extend_from_slice(ping().as_bytes());
        body.extend_from_slice(&[1, 7, 0, 0, 0, 0xff, 0xfe, 0]);
        assert!(matches!(
            decode(&frame_from_body(&body)),
            Err(WireError::InvalidSequenceIdentifier(_))
        ));
    }

    #[test]
    fn unknown_section_kind_is_rejected() {
        let mut body = vec![0, 0, 0, 0, 0];
        body.extend_from_slice(ping().as_bytes());
        body.push(2);
        body.extend_from_slice(ping().as_bytes());
        assert_eq!(
            decode(&frame_from_body(&body)),
            Err(WireError::UnknownSectionKind(2))
        );
    }

    #[test]
    fn malformed_body_document_is_rejected() {
        let mut body = vec![0, 0, 0, 0, 0];
        // Declared length 8 matches, but element type 0x42 does not exist.
        body.extend_from_slice(&[8, 0, 0, 0, 0x42, b'k', 0, 0]);
        assert!(matches!(
            decode(&frame_from_body(&body)),
            Err(WireError::MalformedDocument(_))
        ));
    }

    #[test]
    fn wrong_opcode_is_rejected() {
        let frame = OpMsg::new(ping()).encode(1, 0);
        let (mut header, body) = split(&frame);
        header.op_code = op_code::REPLY;
        assert_eq!(
            OpMsg::decode(&header, body),
            Err(WireError::UnsupportedOpCode(op_code::REPLY))
        );
    }

    #[test]
    fn try_encode_rejects_nul_identifier_and_oversize() {
        let mut msg = OpMsg::new(ping());
        msg.sequences.push(DocumentSequence::new("a\0b", vec![]));
        assert_eq!(
            msg.try_encode(1, 0, 1000),
            Err(WireError::InvalidSequenceIdentifier("a\0b".into()))
        );
        let msg = two_sequences();
        let len = msg.encoded_len();
        assert_eq!(msg.try_encode(1, 0, len).map(|v| v.len()), Ok(len));
        assert_eq!(
            msg.try_encode(1, 0, len - 1),
            Err(WireError::MessageTooLarge {
                length: len,
                max: len - 1
            })
        );
    }

    #[test]
    #[should_panic(expected = "cannot encode OP_MSG")]
    fn encode_panics_on_nul_identifier() {
        let mut msg = OpMsg::new(ping());
        msg.sequences.push(DocumentSequence::new("a\0b", vec![]));
        let _ = msg.encode(1, 0);
    }

    #[test]
    fn every_truncation_of_a_valid_frame_is_handled() {
        // Cut a two-sequence message at every length: never a panic. With a checksum every cut
        // is an error; without one, a cut exactly at a section boundary is a valid (shorter)
        // message, anything else is an error.
        let mut msg = two_sequences();
        for flags in [MsgFlags::empty(), MsgFlags::CHECKSUM_PRESENT] {
            msg.flags = flags;
            let frame = msg.encode(1, 0);
            for cut in HEADER_LEN..frame.len() {
                let result = decode(&frame_from_body(&frame[HEADER_LEN..cut]));
                match result {
                    Err(_) => {}
                    Ok(shorter) => {
                        assert_eq!(flags, MsgFlags::empty(), "cut at {cut} decoded");
                        assert_eq!(shorter.body, msg.body);
                        assert!(shorter.sequences.len() < msg.sequences.len());
                        assert_eq!(
                            shorter.sequences[..],
                            msg.sequences[..shorter.sequences.len()]
                        );
                    }
                }
            }
        }
    }

    /// A reply of `{ ok: 1 }` followed by sequences of `counts[i]` empty documents each.
    /// Written byte by byte: built as documents, the test would cost what it checks.
    fn reply_with_empty_documents(counts: &[usize]) -> Vec<u8> {
        const EMPTY: [u8; 5] = [5, 0, 0, 0, 0];
        let mut body = 0u32.to_le_bytes().to_vec();
        body.push(0);
        body.extend_from_slice(rawdoc! { "ok": 1 }.as_bytes());
        for (i, &count) in counts.iter().enumerate() {
            let identifier = format!("s{i}\0");
            let size = 4 + identifier.len() + count * EMPTY.len();
            body.push(1);
            body.extend_from_slice(&i32::try_from(size).unwrap().to_le_bytes());
            body.extend_from_slice(identifier.as_bytes());
            body.extend_from_slice(&EMPTY.repeat(count));
        }
        frame_from_body(&body)
    }

    #[test]
    fn a_reply_of_millions_of_empty_documents_is_refused_not_expanded() {
        // The case of issue 21: 4.7 million empty documents in a 23.5 MB reply, which
        // expanded to 287 MB as one allocation per document.
        let frame = reply_with_empty_documents(&[4_700_000]);
        assert!(frame.len() > 23_500_000);
        let error = decode(&frame).unwrap_err();
        assert_eq!(error, WireError::TooManyDocuments { max: 100_000 });
        assert_eq!(
            error.to_string(),
            "wire message holds more than 100000 documents outside its body (document \
             sequences or OP_REPLY documents)"
        );
    }

    #[test]
    fn the_document_bound_is_on_the_message_not_each_sequence() {
        let full = decode(&reply_with_empty_documents(&[60_000, 40_000])).unwrap();
        assert_eq!(full.sequences[0].documents.len(), 60_000);
        assert_eq!(full.sequences[1].documents.len(), 40_000);
        assert_eq!(
            decode(&reply_with_empty_documents(&[60_000, 40_001])),
            Err(WireError::TooManyDocuments { max: 100_000 })
        );
    }

    #[test]
    fn every_single_byte_corruption_is_handled_without_panic() {
        // Flip every byte of the body of an un-checksummed frame: decoding may succeed (e.g. a
        // changed value) but must never panic.
        let frame = two_sequences().encode(1, 0);
        for i in HEADER_LEN..frame.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut f = frame.clone();
                f[i] ^= x;
                let _ = decode(&f);
            }
        }
    }

    /// `decode_parts` of `frame`'s body split after its head, which must be what
    /// `decode` of the whole body gives.
    #[track_caller]
    fn parts_agree(frame: &[u8]) -> Result<OpMsg, WireError> {
        let (header, body) = split(frame);
        let head: [u8; OpMsg::HEAD_LEN] = body[..OpMsg::HEAD_LEN].try_into().unwrap();
        let parts = OpMsg::decode_parts(&header, head, body[OpMsg::HEAD_LEN..].to_vec());
        assert_eq!(parts, OpMsg::decode(&header, body));
        parts
    }

    #[test]
    fn a_body_read_in_parts_decodes_as_the_whole_body() {
        let reply = rawdoc! { "cursor": { "id": 0_i64, "firstBatch": [{ "a": 1 }] }, "ok": 1.0 };
        // A reply alone, and the shapes joined again: sequences, a checksum, flags.
        let alone = OpMsg::new(reply.clone()).encode(1, 0);
        assert_eq!(parts_agree(&alone).unwrap().body, reply);
        parts_agree(&two_sequences().encode(1, 0)).unwrap();
        let mut checked = OpMsg::new(reply.clone());
        checked.flags = MsgFlags::CHECKSUM_PRESENT;
        parts_agree(&checked.encode(1, 0)).unwrap();
        let mut streamed = OpMsg::new(reply.clone());
        streamed.flags = MsgFlags::MORE_TO_COME;
        assert!(parts_agree(&streamed.encode(1, 0))
            .unwrap()
            .flags
            .contains(MsgFlags::MORE_TO_COME));

        let body = |flags: u32, kind: u8, document: &[u8]| {
            let mut body = flags.to_le_bytes().to_vec();
            body.push(kind);
            body.extend_from_slice(document);
            frame_from_body(&body)
        };
        let bytes = reply.as_bytes();
        // An unknown required flag; a section kind that does not exist.
        assert!(parts_agree(&body(1 << 5, 0, bytes)).is_err());
        assert!(parts_agree(&body(0, 7, bytes)).is_err());
        // A document whose length claims more, or less, than the bytes there.
        let mut long = bytes.to_vec();
        long[0] += 1;
        assert!(parts_agree(&body(0, 0, &long)).is_err());
        let mut short = bytes.to_vec();
        short[0] -= 1;
        assert!(parts_agree(&body(0, 0, &short)).is_err());
        // Four bytes claiming four: too short for a document.
        assert!(parts_agree(&body(0, 0, &4_i32.to_le_bytes())).is_err());
        // The right length, a broken inside: no terminator, an unknown element type.
        let mut unterminated = bytes.to_vec();
        *unterminated.last_mut().unwrap() = 1;
        assert!(parts_agree(&body(0, 0, &unterminated)).is_err());
        let mut unknown_type = bytes.to_vec();
        unknown_type[4] = 0x42;
        assert!(parts_agree(&body(0, 0, &unknown_type)).is_err());
        // Nested past the depth limit.
        let mut deep = rawdoc! {};
        for _ in 0..=MAX_DOCUMENT_DEPTH {
            deep = rawdoc! { "a": deep };
        }
        assert_eq!(
            parts_agree(&body(0, 0, deep.as_bytes())),
            Err(WireError::DocumentTooDeep {
                max_depth: MAX_DOCUMENT_DEPTH
            })
        );
        // A header whose length is not the body's.
        let mut wrong_length = alone.clone();
        wrong_length[0] += 1;
        let header = MessageHeader::parse(wrong_length[..HEADER_LEN].try_into().unwrap());
        let whole = &wrong_length[HEADER_LEN..];
        let head = whole[..OpMsg::HEAD_LEN].try_into().unwrap();
        assert_eq!(
            OpMsg::decode_parts(&header, head, whole[OpMsg::HEAD_LEN..].to_vec()),
            OpMsg::decode(&header, whole)
        );
        assert!(OpMsg::decode(&header, whole).is_err());
    }
}
