//! The 16-byte standard message header shared by every opcode, request ids and the
//! `responseTo` check.

use std::sync::atomic::{AtomicI32, Ordering};

use super::{WireError, HEADER_LEN};

/// The standard message header (`MsgHeader` in the OP_MSG spec, "OP_MSG"): four little-endian
/// int32s that precede every message on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageHeader {
    /// Total message length in bytes, header included (`messageLength`).
    pub length: i32,
    /// Identifier the sender chose for this message (`requestID`).
    pub request_id: i32,
    /// For replies, the `requestID` of the request being answered; 0 for requests.
    pub response_to: i32,
    /// The opcode; see [`op_code`](super::op_code).
    pub op_code: i32,
}

impl MessageHeader {
    /// Parses a header from its 16 wire bytes (all fields little-endian, OP_MSG spec, Q & A).
    ///
    /// Parsing cannot fail; the plausibility of `length` is checked by
    /// [`body_len`](Self::body_len) before anything is allocated.
    pub fn parse(bytes: &[u8; HEADER_LEN]) -> MessageHeader {
        let field =
            |i: usize| i32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        MessageHeader {
            length: field(0),
            request_id: field(4),
            response_to: field(8),
            op_code: field(12),
        }
    }

    /// The header's 16 wire bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[0..4].copy_from_slice(&self.length.to_le_bytes());
        out[4..8].copy_from_slice(&self.request_id.to_le_bytes());
        out[8..12].copy_from_slice(&self.response_to.to_le_bytes());
        out[12..16].copy_from_slice(&self.op_code.to_le_bytes());
        out
    }

    /// Appends the header's 16 wire bytes to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bytes());
    }

    /// The length of the body that follows the header, to be called before the body is read
    /// or any buffer for it is allocated.
    ///
    /// Fails with [`WireError::FrameTooShort`] when `length` is below 16 (this also rejects
    /// negative lengths) and with [`WireError::FrameTooLarge`] when `length` exceeds
    /// `max_message_size` (OP_MSG spec: "Each OP_MSG MUST NOT exceed the `maxMessageSizeBytes`").
    /// The minimum body size of each opcode is enforced by its decoder.
    pub fn body_len(&self, max_message_size: usize) -> Result<usize, WireError> {
        let total = usize::try_from(self.length)
            .ok()
            .filter(|&n| n >= HEADER_LEN)
            .ok_or(WireError::FrameTooShort {
                length: self.length,
            })?;
        if total > max_message_size {
            return Err(WireError::FrameTooLarge {
                length: self.length,
                max: max_message_size,
            });
        }
        Ok(total - HEADER_LEN)
    }

    /// Checks that `body` is exactly as long as `length` says; every decoder starts with this.
    pub(crate) fn check_body(&self, body: &[u8]) -> Result<(), WireError> {
        let matches = usize::try_from(self.length)
            .ok()
            .and_then(|n| n.checked_sub(HEADER_LEN))
            == Some(body.len());
        if matches {
            Ok(())
        } else {
            Err(WireError::LengthMismatch {
                header_length: self.length,
                body_len: body.len(),
            })
        }
    }
}

/// Checks that a reply answers the request that was sent: its `responseTo` must equal that
/// request's `requestID` (for exhaust replies, the `requestID` of the previous reply; OP_MSG
/// spec, "moreToCome On Responses").
pub fn check_response_to(
    header: &MessageHeader,
    expected_request_id: i32,
) -> Result<(), WireError> {
    if header.response_to == expected_request_id {
        Ok(())
    } else {
        Err(WireError::ResponseToMismatch {
            expected: expected_request_id,
            actual: header.response_to,
        })
    }
}

static NEXT_REQUEST_ID: AtomicI32 = AtomicI32::new(1);

/// A fresh `requestID` for an outgoing message: process-wide, increasing, always positive
/// (after `i32::MAX` it wraps around to 1).
pub fn next_request_id() -> i32 {
    // The counter only ever holds values in 1..=i32::MAX, so whatever is taken is positive.
    let mut current = NEXT_REQUEST_ID.load(Ordering::Relaxed);
    loop {
        let next = if current == i32::MAX { 1 } else { current + 1 };
        match NEXT_REQUEST_ID.compare_exchange_weak(
            current,
            next,
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            Ok(_) => return current,
            Err(actual) => current = actual,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::op_code;
    use super::*;

    #[test]
    fn parse_and_write_round_trip_little_endian() {
        let bytes: [u8; 16] = [
            0x20, 0, 0, 0, // length 32
            0x01, 0x02, 0, 0, // request id 0x0201
            0xff, 0xff, 0xff, 0xff, // response to -1
            0xdd, 0x07, 0, 0, // 2013
        ];
        let h = MessageHeader::parse(&bytes);
        assert_eq!(
            h,
            MessageHeader {
                length: 32,
                request_id: 0x0201,
                response_to: -1,
                op_code: op_code::MSG
            }
        );
        let mut out = vec![0xaa];
        h.write_to(&mut out);
        assert_eq!(&out[1..], &bytes[..]);
        assert_eq!(h.to_bytes(), bytes);
    }

    fn header(length: i32) -> MessageHeader {
        MessageHeader {
            length,
            request_id: 1,
            response_to: 0,
            op_code: op_code::MSG,
        }
    }

    #[test]
    fn body_len_accepts_bounds() {
        assert_eq!(header(16).body_len(100), Ok(0));
        assert_eq!(header(100).body_len(100), Ok(84));
    }

    #[test]
    fn body_len_rejects_short_and_negative_lengths() {
        assert_eq!(
            header(15).body_len(100),
            Err(WireError::FrameTooShort { length: 15 })
        );
        assert_eq!(
            header(0).body_len(100),
            Err(WireError::FrameTooShort { length: 0 })
        );
        assert_eq!(
            header(i32::MIN).body_len(100),
            Err(WireError::FrameTooShort { length: i32::MIN })
        );
    }

    #[test]
    fn body_len_rejects_oversized_before_allocation() {
        // A hostile i32::MAX length is rejected from the header alone: no body buffer exists.
        assert_eq!(
            header(i32::MAX).body_len(super::super::MAX_MESSAGE_SIZE),
            Err(WireError::FrameTooLarge {
                length: i32::MAX,
                max: 48_000_000
            })
        );
        assert_eq!(
            header(101).body_len(100),
            Err(WireError::FrameTooLarge {
                length: 101,
                max: 100
            })
        );
    }

    #[test]
    fn check_body_requires_exact_length() {
        assert_eq!(header(20).check_body(&[0; 4]), Ok(()));
        assert_eq!(
            header(20).check_body(&[0; 3]),
            Err(WireError::LengthMismatch {
                header_length: 20,
                body_len: 3
            })
        );
        assert_eq!(
            header(-5).check_body(&[]),
            Err(WireError::LengthMismatch {
                header_length: -5,
                body_len: 0
            })
        );
    }

    #[test]
    fn response_to_must_match() {
        let mut h = header(16);
        h.response_to = 41;
        assert_eq!(check_response_to(&h, 41), Ok(()));
        assert_eq!(
            check_response_to(&h, 42),
            Err(WireError::ResponseToMismatch {
                expected: 42,
                actual: 41
            })
        );
    }

    #[test]
    fn request_ids_are_positive_and_increasing() {
        let a = next_request_id();
        let b = next_request_id();
        assert!(a > 0 && b > 0);
        // Other tests may take ids concurrently, so only strict growth is guaranteed.
        assert!(b > a, "{b} should be greater than {a}");
    }
}
