//! Percent-encoding (RFC 3986 section 2.1), as the Connection String spec uses it.

use crate::error::{Error, Result};

/// Decodes `%XX` escapes. A `%` not followed by two hex digits, or escapes that do
/// not decode to UTF-8, are an error naming `what` (which must not quote a secret).
/// `+` stays `+` (the spec's Q&A: "Space characters SHOULD be encoded as %20 rather
/// than +").
pub(super) fn percent_decode(text: &str, what: &str) -> Result<String> {
    let invalid = || {
        Error::invalid_argument(format!(
            "invalid percent-encoding in {what}: '%' must start a %XX escape, and the escapes must form UTF-8"
        ))
    };
    if !text.contains('%') {
        return Ok(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        if byte == b'%' {
            let value = bytes
                .get(i + 1..i + 3)
                .and_then(|hex| Some(hex_value(hex[0])? << 4 | hex_value(hex[1])?))
                .ok_or_else(invalid)?;
            out.push(value);
            i += 3;
        } else {
            out.push(byte);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| invalid())
}

/// Whether `text` holds a `%` that does not start a `%XX` escape.
pub(super) fn has_stray_percent(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(i, &byte)| {
        byte == b'%'
            && !bytes
                .get(i + 1..i + 3)
                .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    })
}

fn hex_value(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|value| u8::try_from(value).ok())
}

/// Encodes every byte but RFC 3986's unreserved characters (letters, digits, `-._~`).
pub(super) fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
