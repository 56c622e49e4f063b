//! The framing constants every codec shares: opcodes, the header's length, the size
//! limits a frame is checked against, and how receive buffers grow.

/// Length of the standard message header (`MsgHeader`: four int32s).
pub const HEADER_LEN: usize = 16;

/// The largest message the protocol allows: the value every server advertises as
/// `maxMessageSizeBytes` (the MongoDB manual's `hello` reference; "the 48 MB
/// `maxMessageSizeBytes`" of the Retryable Writes tests), and its default.
/// The cap before the handshake, and above whatever a server advertises: a hostile
/// hello cannot make the driver accept, or build, larger frames.
pub const MAX_MESSAGE_SIZE: usize = 48_000_000;

/// The most documents one message may carry in one batch: the value servers advertise as
/// `maxWriteBatchSize`, and its default (OP_MSG spec, Q & A: "The maximum number
/// of documents per batch is dictated by the `maxWriteBatchSize`").
pub const MAX_WRITE_BATCH_SIZE: usize = 100_000;

/// The first step of a buffer filled from the network or a decompressor: what is set
/// aside ahead of the bytes that actually came.
pub(crate) const GROWTH_STEP: usize = 64 * 1024;

/// How long a buffer filled up to `filled` of `total` announced bytes grows next: it
/// doubles from [`GROWTH_STEP`], never past `total`. A length field is only a claim;
/// memory follows the bytes that came (at most twice them, plus one step), and a
/// genuine large message costs few copies.
pub(crate) fn grown_len(filled: usize, total: usize) -> usize {
    total.min(filled.saturating_mul(2).max(GROWTH_STEP))
}

/// Wire protocol opcodes (the `opCode` header field).
pub mod op_code {
    /// OP_REPLY: reply to a legacy OP_QUERY.
    pub const REPLY: i32 = 1;
    /// OP_QUERY: legacy query, used only for a legacy-hello handshake.
    pub const QUERY: i32 = 2004;
    /// OP_COMPRESSED: a compressed wrapper around another opcode (see [`compression`](crate::wire::compression)).
    pub const COMPRESSED: i32 = 2012;
    /// OP_MSG: the extensible message used for all modern commands.
    pub const MSG: i32 = 2013;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_grow_from_one_step_doubling_up_to_the_total() {
        assert_eq!(grown_len(0, 10), 10);
        assert_eq!(grown_len(0, 40_000_000), GROWTH_STEP);
        assert_eq!(grown_len(GROWTH_STEP, 40_000_000), 2 * GROWTH_STEP);
        assert_eq!(grown_len(30_000_000, 40_000_000), 40_000_000);
        assert_eq!(grown_len(usize::MAX / 2 + 1, usize::MAX), usize::MAX);
    }
}
