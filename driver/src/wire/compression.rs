//! OP_COMPRESSED (opcode 2012): wire compression (OP_COMPRESSED spec,
//! `specs/compression/OP_COMPRESSED.md`).
//!
//! Pure and I/O-free: [`negotiate`] picks the compressor from the handshake,
//! [`may_compress`] applies the spec's list of commands that must never be compressed,
//! [`Compression::compress_frame`] wraps an encoded message, and [`decompress_frame`]
//! unwraps a received one. The codecs are pure Rust (`snap`, `flate2` on miniz_oxide,
//! `ruzstd`), so every compressor works on every target the driver builds for.
//!
//! A received OP_COMPRESSED is hostile until proven otherwise: its declared
//! `uncompressedSize` is checked against the maximum message size before any buffer is
//! allocated, the decoders never produce more than that many bytes, and a body that
//! decompresses to any other length is an error.

use std::io::{Read, Write};

use super::{grown_len, op_code, MessageHeader, WireError, HEADER_LEN};
use crate::named_enum::named_enum;

named_enum! {
    /// A wire protocol compressor (OP_COMPRESSED spec, "compressors").
    Compressor {
        /// Snappy.
        Snappy = "snappy",
        /// zlib, at [`crate::ClientOptions::zlib_compression_level`].
        Zlib = "zlib",
        /// Zstandard.
        Zstd = "zstd",
    }
}

/// The `compressorId` of the noop compressor: the content is not compressed
/// (OP_COMPRESSED spec, "Compressor IDs"). Only ever received, never sent.
pub const NOOP_COMPRESSOR_ID: u8 = 0;

/// The bytes between the header and the compressed message: `originalOpcode`,
/// `uncompressedSize` and `compressorId`.
const PREFIX_LEN: usize = 9;

/// The commands whose messages MUST NOT be compressed (OP_COMPRESSED spec, "Messages not
/// allowed to be compressed"), lower-cased: the legacy hello is `isMaster`/`ismaster`.
const NEVER_COMPRESSED: [&str; 11] = [
    "hello",
    "ismaster",
    "saslstart",
    "saslcontinue",
    "getnonce",
    "authenticate",
    "createuser",
    "updateuser",
    "copydbsaslstart",
    "copydbgetnonce",
    "copydb",
];

impl Compressor {
    /// The `compressorId` of this compressor in an OP_COMPRESSED message
    /// (OP_COMPRESSED spec, "Compressor IDs").
    pub const fn id(self) -> u8 {
        match self {
            Compressor::Snappy => 1,
            Compressor::Zlib => 2,
            Compressor::Zstd => 3,
        }
    }

    /// The compressor with `compressorId` `id`, if it is one of the three.
    pub fn from_id(id: u8) -> Option<Compressor> {
        Compressor::ALL
            .iter()
            .copied()
            .find(|compressor| compressor.id() == id)
    }
}

/// The compressor to use on a connection: the first of the client's `compressors` that
/// the server named in its hello reply's `compression` (OP_COMPRESSED spec, "MongoDB
/// Handshake Amendment"), or `None`, when nothing is compressed.
///
/// ```
/// use anymongo::uri::Compressor;
/// use anymongo::wire::compression::negotiate;
/// let client = [Compressor::Zstd, Compressor::Zlib];
/// let server = ["zlib".to_string(), "zstd".to_string()];
/// assert_eq!(negotiate(&client, &server), Some(Compressor::Zstd));
/// assert_eq!(negotiate(&[Compressor::Snappy], &server), None);
/// ```
pub fn negotiate(client: &[Compressor], server: &[String]) -> Option<Compressor> {
    client
        .iter()
        .copied()
        .find(|compressor| server.iter().any(|name| name == compressor.name()))
}

/// Whether a message carrying the command `command_name` (the first key of its body)
/// may be compressed: every command but those of the spec's never-compress list.
///
/// ```
/// use anymongo::wire::compression::may_compress;
/// assert!(may_compress("find"));
/// assert!(!may_compress("saslStart"));
/// assert!(!may_compress("isMaster"));
/// ```
pub fn may_compress(command_name: &str) -> bool {
    !NEVER_COMPRESSED
        .iter()
        .any(|name| name.eq_ignore_ascii_case(command_name))
}

/// A negotiated compressor with its settings: what a connection compresses with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compression {
    /// The compressor.
    pub compressor: Compressor,
    /// `zlibCompressionLevel`, -1 (the library's default) to 9; used by zlib only.
    pub zlib_level: Option<i32>,
}

impl Compression {
    /// Wraps `frame`, one encoded message (header included), in an OP_COMPRESSED that
    /// keeps its `requestID` and `responseTo` (OP_COMPRESSED spec, "OP_COMPRESSED").
    ///
    /// ```
    /// use anymongo::bson::rawdoc;
    /// use anymongo::uri::Compressor;
    /// use anymongo::wire::compression::{decompress_frame, Compression};
    /// use anymongo::wire::{MessageHeader, OpMsg, MAX_MESSAGE_SIZE, HEADER_LEN};
    ///
    /// let frame = OpMsg::new(rawdoc! { "ping": 1, "$db": "admin" }).encode(7, 0);
    /// let zlib = Compression { compressor: Compressor::Zlib, zlib_level: Some(9) };
    /// let compressed = zlib.compress_frame(&frame).unwrap();
    /// let header = MessageHeader::parse(compressed[..HEADER_LEN].try_into().unwrap());
    /// let (inner, body) =
    ///     decompress_frame(&header, &compressed[HEADER_LEN..], MAX_MESSAGE_SIZE).unwrap();
    /// assert_eq!((inner.request_id, &body[..]), (7, &frame[HEADER_LEN..]));
    /// ```
    pub fn compress_frame(&self, frame: &[u8]) -> Result<Vec<u8>, WireError> {
        let (header, payload) = match frame.split_first_chunk::<HEADER_LEN>() {
            Some((header, payload)) => (MessageHeader::parse(header), payload),
            None => return Err(WireError::Truncated("message header")),
        };
        let too_large = |length: usize| WireError::MessageTooLarge {
            length,
            max: i32::MAX as usize,
        };
        let uncompressed_size = i32::try_from(payload.len()).map_err(|_| too_large(frame.len()))?;
        let compressed = self.compress(payload)?;
        let total = HEADER_LEN + PREFIX_LEN + compressed.len();
        let wrapper = MessageHeader {
            length: i32::try_from(total).map_err(|_| too_large(total))?,
            request_id: header.request_id,
            response_to: header.response_to,
            op_code: op_code::COMPRESSED,
        };
        let mut out = Vec::with_capacity(total);
        wrapper.write_to(&mut out);
        out.extend_from_slice(&header.op_code.to_le_bytes());
        out.extend_from_slice(&uncompressed_size.to_le_bytes());
        out.push(self.compressor.id());
        out.extend_from_slice(&compressed);
        Ok(out)
    }

    fn compress(&self, payload: &[u8]) -> Result<Vec<u8>, WireError> {
        let failed = |error: &dyn std::fmt::Display| WireError::Compression {
            compressor: self.compressor.name(),
            message: error.to_string(),
        };
        match self.compressor {
            Compressor::Snappy => snap::raw::Encoder::new()
                .compress_vec(payload)
                .map_err(|error| failed(&error)),
            Compressor::Zlib => {
                // -1 (or no level) is zlib's default; the URI parser bounds the level to -1..=9.
                let level = match self.zlib_level {
                    Some(level @ 0..=9) => flate2::Compression::new(level.unsigned_abs()),
                    _ => flate2::Compression::default(),
                };
                let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), level);
                encoder
                    .write_all(payload)
                    .and_then(|()| encoder.finish())
                    .map_err(|error| failed(&error))
            }
            // ruzstd implements the "Fastest" level (about zstd's level 1) so far.
            Compressor::Zstd => Ok(ruzstd::encoding::compress_to_vec(
                payload,
                ruzstd::encoding::CompressionLevel::Fastest,
            )),
        }
    }
}

/// Unwraps a received OP_COMPRESSED (`header` and the `body` after it): returns the
/// header of the original message (its opcode, and the length it has uncompressed) and
/// its uncompressed body, for [`Message::decode`](super::Message::decode).
///
/// Any compressor the driver knows is accepted, negotiated or not (OP_COMPRESSED spec:
/// "clients MUST NOT assume which compressor each message uses"). Fails, before
/// allocating anything, when the declared `uncompressedSize` is negative or makes the
/// message longer than `max_message_size`; fails when the body does not decompress to
/// exactly that size, when the compressor id is unknown, and when the original opcode is
/// OP_COMPRESSED again.
pub fn decompress_frame(
    header: &MessageHeader,
    body: &[u8],
    max_message_size: usize,
) -> Result<(MessageHeader, Vec<u8>), WireError> {
    if header.op_code != op_code::COMPRESSED {
        return Err(WireError::UnsupportedOpCode(header.op_code));
    }
    header.check_body(body)?;
    let Some((prefix, compressed)) = body.split_first_chunk::<PREFIX_LEN>() else {
        return Err(WireError::Truncated("OP_COMPRESSED prefix"));
    };
    let int = |at: usize| {
        i32::from_le_bytes([prefix[at], prefix[at + 1], prefix[at + 2], prefix[at + 3]])
    };
    let (original_op_code, declared, compressor_id) = (int(0), int(4), prefix[8]);
    if original_op_code == op_code::COMPRESSED {
        return Err(WireError::UnsupportedOpCode(original_op_code));
    }
    let max_size = max_message_size.saturating_sub(HEADER_LEN);
    let size = usize::try_from(declared)
        .ok()
        .filter(|&size| size <= max_size)
        .ok_or(WireError::UncompressedSizeOutOfBounds {
            size: declared,
            max: max_size,
        })?;
    let uncompressed = match compressor_id {
        NOOP_COMPRESSOR_ID => compressed.to_vec(),
        id => match Compressor::from_id(id) {
            Some(compressor) => decompress(compressor, compressed, size, max_message_size)?,
            None => return Err(WireError::UnknownCompressor(id)),
        },
    };
    if uncompressed.len() != size {
        return Err(WireError::UncompressedSizeMismatch { declared: size });
    }
    let original = MessageHeader {
        // `size` is at most `max_message_size - 16`, and a declared int32.
        length: declared.saturating_add(HEADER_LEN as i32),
        request_id: header.request_id,
        response_to: header.response_to,
        op_code: original_op_code,
    };
    Ok((original, uncompressed))
}

/// Decompresses `data`, producing at most `size + 1` bytes (one more than declared, so
/// that an overlong body is noticed without decompressing it all).
fn decompress(
    compressor: Compressor,
    data: &[u8],
    size: usize,
    max_message_size: usize,
) -> Result<Vec<u8>, WireError> {
    let failed = |error: &dyn std::fmt::Display| WireError::Decompression {
        compressor: compressor.name(),
        message: error.to_string(),
    };
    match compressor {
        Compressor::Snappy => {
            // A snappy block starts with its uncompressed length: check it before the
            // output buffer (of that length) is allocated, and against what the bytes
            // present can expand to, so that a few bytes cannot claim megabytes.
            let length = snap::raw::decompress_len(data).map_err(|error| failed(&error))?;
            if length != size {
                return Err(WireError::UncompressedSizeMismatch { declared: size });
            }
            if size > data.len().saturating_mul(SNAPPY_MAX_EXPANSION) {
                return Err(failed(&format_args!(
                    "{size} bytes declared, more than {} compressed bytes can hold",
                    data.len()
                )));
            }
            snap::raw::Decoder::new()
                .decompress_vec(data)
                .map_err(|error| failed(&error))
        }
        Compressor::Zlib => {
            read_at_most(flate2::read::ZlibDecoder::new(data), size).map_err(|e| failed(&e))
        }
        Compressor::Zstd => {
            // The decoder reserves the frame's window up front: bounded by what the
            // message can hold, and by what its declared size needs (rounded up to a
            // power of two, as encoders size windows) unless the window is one of the
            // standard levels' (at most 8 MiB).
            let window = size
                .checked_next_power_of_two()
                .unwrap_or(usize::MAX)
                .max(ZSTD_STANDARD_WINDOW)
                .min(max_message_size);
            let decoder =
                ruzstd::decoding::StreamingDecoder::new_with_max_window_size(data, window as u64)
                    .map_err(|error| failed(&error))?;
            read_at_most(decoder, size).map_err(|error| failed(&error))
        }
    }
}

/// The most a snappy block can expand: its longest element, a copy of 64 bytes, takes 3
/// bytes (the snappy format description, "Copy with 2-byte offset"); 22 > 64 / 3.
const SNAPPY_MAX_EXPANSION: usize = 22;

/// The largest window zstd's standard compression levels use (`windowLog` 23).
const ZSTD_STANDARD_WINDOW: usize = 1 << 23;

/// Reads at most `size + 1` bytes from `reader` (one more than declared, so that an
/// overlong body is noticed without decompressing it all), into a buffer that grows
/// with the output ([`grown_len`]): a declared size is only a claim.
fn read_at_most(mut reader: impl Read, size: usize) -> std::io::Result<Vec<u8>> {
    let total = size.saturating_add(1);
    let mut out = Vec::new();
    while out.len() < total {
        let start = out.len();
        let end = grown_len(start, total);
        out.reserve_exact(end - start);
        out.resize(end, 0);
        let mut filled = start;
        while filled < end {
            match reader.read(&mut out[filled..end]) {
                Ok(0) => {
                    out.truncate(filled);
                    return Ok(out);
                }
                Ok(n) => filled += n,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use bson::rawdoc;

    use super::super::{Message, OpMsg, MAX_MESSAGE_SIZE};
    use super::*;

    fn split(frame: &[u8]) -> (MessageHeader, &[u8]) {
        let (header, body) = frame.split_first_chunk::<HEADER_LEN>().unwrap();
        (MessageHeader::parse(header), body)
    }

    fn with(compressor: Compressor) -> Compression {
        Compression {
            compressor,
            zlib_level: None,
        }
    }

    /// A message worth compressing.
    fn find_frame() -> Vec<u8> {
        let filter = "x".repeat(2000);
        OpMsg::new(rawdoc! { "find": "c", "filter": { "name": filter }, "$db": "db" }).encode(42, 7)
    }

    /// An OP_COMPRESSED frame built by hand: the header, the prefix, `data`.
    fn compressed_frame(original: i32, declared: i32, id: u8, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        MessageHeader {
            length: (HEADER_LEN + PREFIX_LEN + data.len()) as i32,
            request_id: 5,
            response_to: 4,
            op_code: op_code::COMPRESSED,
        }
        .write_to(&mut out);
        out.extend_from_slice(&original.to_le_bytes());
        out.extend_from_slice(&declared.to_le_bytes());
        out.push(id);
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn compressor_ids_are_the_specs() {
        assert_eq!(
            Compressor::ALL.iter().map(|c| c.id()).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(Compressor::from_id(3), Some(Compressor::Zstd));
        assert_eq!(Compressor::from_id(0), None);
        assert_eq!(Compressor::from_id(4), None);
    }

    #[test]
    fn negotiation_takes_the_clients_first_choice_the_server_named() {
        let server = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let client = [Compressor::Zlib, Compressor::Snappy];
        assert_eq!(
            negotiate(&client, &server(&["snappy", "zlib"])),
            Some(Compressor::Zlib)
        );
        assert_eq!(
            negotiate(&client, &server(&["zstd", "snappy"])),
            Some(Compressor::Snappy)
        );
        assert_eq!(negotiate(&client, &server(&["zstd"])), None);
        assert_eq!(negotiate(&client, &[]), None);
        assert_eq!(negotiate(&[], &server(&["zlib"])), None);
    }

    #[test]
    fn the_never_compress_list_is_the_specs_whatever_the_case() {
        for name in [
            "hello",
            "isMaster",
            "ismaster",
            "saslStart",
            "saslContinue",
            "getnonce",
            "authenticate",
            "createUser",
            "updateUser",
            "copydbSaslStart",
            "copydbgetnonce",
            "copydb",
        ] {
            assert!(!may_compress(name), "{name}");
        }
        for name in [
            "find",
            "insert",
            "getMore",
            "ping",
            "dropUser",
            "helloworld",
        ] {
            assert!(may_compress(name), "{name}");
        }
    }

    #[test]
    fn every_compressor_round_trips_and_shrinks_a_message() {
        let frame = find_frame();
        for compressor in Compressor::ALL.iter().copied() {
            for zlib_level in [None, Some(-1), Some(0), Some(1), Some(9)] {
                let compression = Compression {
                    compressor,
                    zlib_level,
                };
                let compressed = compression.compress_frame(&frame).unwrap();
                let (header, body) = split(&compressed);
                assert_eq!(header.op_code, op_code::COMPRESSED);
                assert_eq!(header.length as usize, compressed.len());
                assert_eq!((header.request_id, header.response_to), (42, 7));
                assert_eq!(body[8], compressor.id());
                if zlib_level != Some(0) {
                    assert!(
                        compressed.len() < frame.len() / 4,
                        "{compressor}: {} of {}",
                        compressed.len(),
                        frame.len()
                    );
                }
                let (original, payload) =
                    decompress_frame(&header, body, MAX_MESSAGE_SIZE).unwrap();
                assert_eq!(original, split(&frame).0, "{compressor}");
                assert_eq!(payload, &frame[HEADER_LEN..], "{compressor}");
                let message = Message::decode(&original, &payload).unwrap();
                assert_eq!(
                    message.into_reply_document().unwrap().get_str("find").ok(),
                    Some("c")
                );
            }
        }
    }

    #[test]
    fn frames_made_by_the_codecs_themselves_decompress() {
        // Independent of compress_frame: the libraries' own output, framed by hand.
        let frame = find_frame();
        let payload = &frame[HEADER_LEN..];
        let snappy = snap::raw::Encoder::new().compress_vec(payload).unwrap();
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        zlib.write_all(payload).unwrap();
        let zlib = zlib.finish().unwrap();
        let zstd = ruzstd::encoding::compress_to_vec(
            payload,
            ruzstd::encoding::CompressionLevel::Uncompressed,
        );
        for (id, data) in [(0, payload.to_vec()), (1, snappy), (2, zlib), (3, zstd)] {
            let wrapped = compressed_frame(op_code::MSG, payload.len() as i32, id, &data);
            let (header, body) = split(&wrapped);
            let (original, out) = decompress_frame(&header, body, MAX_MESSAGE_SIZE).unwrap();
            assert_eq!(out, payload, "compressor id {id}");
            assert_eq!(original.op_code, op_code::MSG);
            assert_eq!(original.length as usize, frame.len());
            assert_eq!((original.request_id, original.response_to), (5, 4));
        }
    }

    #[test]
    fn a_wrong_declared_size_is_an_error_for_every_compressor() {
        let frame = find_frame();
        let real = (frame.len() - HEADER_LEN) as i32;
        for compressor in Compressor::ALL.iter().copied() {
            let compressed = with(compressor).compress_frame(&frame).unwrap();
            let data = &compressed[HEADER_LEN + PREFIX_LEN..];
            for declared in [real - 1, real + 1, 0] {
                let wrong = compressed_frame(op_code::MSG, declared, compressor.id(), data);
                let (header, body) = split(&wrong);
                assert_eq!(
                    decompress_frame(&header, body, MAX_MESSAGE_SIZE),
                    Err(WireError::UncompressedSizeMismatch {
                        declared: declared as usize
                    }),
                    "{compressor} declaring {declared} of {real}"
                );
            }
        }
        let noop = compressed_frame(op_code::MSG, 10, 0, &[0; 9]);
        let (header, body) = split(&noop);
        assert_eq!(
            decompress_frame(&header, body, MAX_MESSAGE_SIZE),
            Err(WireError::UncompressedSizeMismatch { declared: 10 })
        );
    }

    #[test]
    fn a_huge_or_negative_declared_size_is_refused_before_decompressing() {
        for declared in [i32::MAX, 48_000_000, -1, i32::MIN] {
            let frame = compressed_frame(op_code::MSG, declared, 2, &[0x78, 0x9c]);
            let (header, body) = split(&frame);
            assert_eq!(
                decompress_frame(&header, body, MAX_MESSAGE_SIZE),
                Err(WireError::UncompressedSizeOutOfBounds {
                    size: declared,
                    max: MAX_MESSAGE_SIZE - HEADER_LEN
                })
            );
        }
        // The limit in force is the connection's (the server's maxMessageSizeBytes).
        let frame = compressed_frame(op_code::MSG, 1000, 0, &[0; 1000]);
        let (header, body) = split(&frame);
        assert!(decompress_frame(&header, body, 1016).is_ok());
        assert!(matches!(
            decompress_frame(&header, body, 1015),
            Err(WireError::UncompressedSizeOutOfBounds { size: 1000, .. })
        ));
    }

    #[test]
    fn a_bomb_stops_one_byte_past_the_declared_size() {
        // 10 MB of zeros compress to about 10 kB; declared as 1000 bytes, decompression
        // stops at 1001 instead of inflating it all.
        let zeros = vec![0u8; 10_000_000];
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        zlib.write_all(&zeros).unwrap();
        let zlib = zlib.finish().unwrap();
        let zstd = ruzstd::encoding::compress_to_vec(
            &zeros[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        for (compressor, data) in [(Compressor::Zlib, zlib), (Compressor::Zstd, zstd)] {
            assert!(data.len() < 100_000, "{compressor}: {}", data.len());
            assert_eq!(
                decompress(compressor, &data, 1000, MAX_MESSAGE_SIZE),
                Ok(vec![0; 1001]),
                "{compressor}"
            );
        }
    }

    #[test]
    fn a_declared_size_is_not_allocated_before_the_output_comes() {
        // A few bytes that declare 40 MB: memory follows the output, not the claim.
        let declared = 40_000_000;
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        zlib.write_all(b"ten bytes!").unwrap();
        let zlib = zlib.finish().unwrap();
        let zstd = ruzstd::encoding::compress_to_vec(
            &b"ten bytes!"[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        for (compressor, data) in [(Compressor::Zlib, zlib), (Compressor::Zstd, zstd)] {
            let out = decompress(compressor, &data, declared, MAX_MESSAGE_SIZE).unwrap();
            assert_eq!(out, b"ten bytes!", "{compressor}");
            assert!(
                out.capacity() <= super::super::GROWTH_STEP,
                "{compressor}: {} bytes set aside",
                out.capacity()
            );
        }
        // Snappy's decoder allocates the length its block declares: a block that
        // claims more than its bytes can expand to is refused first.
        let mut snappy = Vec::new();
        let mut length = declared as u32;
        while length >= 0x80 {
            snappy.push(length as u8 | 0x80);
            length >>= 7;
        }
        snappy.push(length as u8);
        snappy.extend_from_slice(&[0; 10]);
        let frame = compressed_frame(
            op_code::MSG,
            declared as i32,
            Compressor::Snappy.id(),
            &snappy,
        );
        let (header, body) = split(&frame);
        let error = decompress_frame(&header, body, MAX_MESSAGE_SIZE).unwrap_err();
        assert_eq!(
            error.to_string(),
            "OP_COMPRESSED body is not valid snappy data: 40000000 bytes declared, more than \
             14 compressed bytes can hold"
        );
    }

    #[test]
    fn unknown_compressors_corrupt_data_and_nesting_are_errors() {
        for id in [4, 255] {
            let frame = compressed_frame(op_code::MSG, 5, id, &[1, 2, 3]);
            let (header, body) = split(&frame);
            assert_eq!(
                decompress_frame(&header, body, MAX_MESSAGE_SIZE),
                Err(WireError::UnknownCompressor(id))
            );
        }
        for compressor in Compressor::ALL.iter().copied() {
            let frame = compressed_frame(op_code::MSG, 100, compressor.id(), &[0xff; 40]);
            let (header, body) = split(&frame);
            let error = decompress_frame(&header, body, MAX_MESSAGE_SIZE).unwrap_err();
            assert!(
                matches!(
                    error,
                    WireError::Decompression { .. } | WireError::UncompressedSizeMismatch { .. }
                ),
                "{compressor}: {error:?}"
            );
        }
        let nested = compressed_frame(op_code::COMPRESSED, 5, 0, &[0; 5]);
        let (header, body) = split(&nested);
        assert_eq!(
            decompress_frame(&header, body, MAX_MESSAGE_SIZE),
            Err(WireError::UnsupportedOpCode(op_code::COMPRESSED))
        );
    }

    #[test]
    fn truncated_frames_are_errors() {
        let frame = compressed_frame(op_code::MSG, 0, 0, &[]);
        let (header, body) = split(&frame);
        assert_eq!(
            decompress_frame(&header, &body[..PREFIX_LEN], MAX_MESSAGE_SIZE),
            Ok((
                MessageHeader {
                    length: HEADER_LEN as i32,
                    request_id: 5,
                    response_to: 4,
                    op_code: op_code::MSG
                },
                Vec::new()
            ))
        );
        let short = MessageHeader {
            length: (HEADER_LEN + 4) as i32,
            ..header
        };
        assert_eq!(
            decompress_frame(&short, &body[..4], MAX_MESSAGE_SIZE),
            Err(WireError::Truncated("OP_COMPRESSED prefix"))
        );
        assert_eq!(
            decompress_frame(&header, &body[..4], MAX_MESSAGE_SIZE),
            Err(WireError::LengthMismatch {
                header_length: header.length,
                body_len: 4
            })
        );
        assert_eq!(
            with(Compressor::Snappy).compress_frame(&[0; 10]),
            Err(WireError::Truncated("message header"))
        );
    }
}
