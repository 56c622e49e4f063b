//! Structural validation of BSON documents received from the network.

use bson::raw::{RawBsonRef, RawIter};
use bson::{RawDocument, RawDocumentBuf};

use super::WireError;
use crate::bson_deserializer::{shape, Shape};

/// The nesting limit applied to every document the codec decodes. It matches the server's
/// default `maxBSONDepth`; the top-level document has depth 0 and every embedded document,
/// array or code-with-scope scope adds one level.
pub const MAX_DOCUMENT_DEPTH: usize = crate::bson_deserializer::MAX_DOCUMENT_DEPTH;

/// Fully validates the structure of a BSON document without recursion.
///
/// Every element of `doc` and of every embedded document, array and code-with-scope scope is
/// parsed (lengths, terminators, UTF-8 of keys and strings, fixed-size values). Documents are
/// walked with an explicit stack whose height is bounded by `max_depth`, so hostile nesting
/// cannot overflow the call stack. The top-level document has depth 0; an element that would
/// open a level deeper than `max_depth` fails with [`WireError::DocumentTooDeep`]. Any other
/// defect fails with [`WireError::MalformedDocument`].
pub fn validate_document(doc: &RawDocument, max_depth: usize) -> Result<(), WireError> {
    // Every reply passes here, so a find's whole batch does: first the leaner walk of
    // `bson_deserializer`'s element reader (no `RawElement` or `RawBsonRef` per element,
    // SIMD UTF-8), whose checks are the bson crate's or stricter. Only a document it
    // does not pass is walked again with the bson crate's iterator, which decides, and
    // names the defect in its error.
    match shape(doc.as_bytes(), max_depth) {
        Shape::WellFormed => Ok(()),
        Shape::TooDeep | Shape::Malformed => validate_with_the_bson_crate(doc, max_depth),
    }
}

/// [`validate_document`] by the bson crate's `RawIter`, whose errors name the defect.
fn validate_with_the_bson_crate(doc: &RawDocument, max_depth: usize) -> Result<(), WireError> {
    // Invariant: stack[i] iterates a document at depth i.
    let mut stack: Vec<RawIter<'_>> = vec![doc.iter_elements()];
    while let Some(iter) = stack.last_mut() {
        let element = match iter.next() {
            None => {
                stack.pop();
                continue;
            }
            Some(element) => element.map_err(malformed)?,
        };
        let nested = match element.value().map_err(malformed)? {
            RawBsonRef::Document(d) => d,
            RawBsonRef::Array(a) => RawDocument::from_bytes(a.as_bytes()).map_err(malformed)?,
            RawBsonRef::JavaScriptCodeWithScope(c) => c.scope,
            _ => continue,
        };
        // The nested document's depth is the current stack height.
        if stack.len() > max_depth {
            return Err(WireError::DocumentTooDeep { max_depth });
        }
        stack.push(nested.iter_elements());
    }
    Ok(())
}

pub(crate) fn malformed(e: bson::error::Error) -> WireError {
    WireError::MalformedDocument(e.to_string())
}

/// Reads one document from the start of `bytes`, which holds everything that remains of the
/// enclosing section or message. The declared length is checked against `bytes.len()` before
/// anything is sliced or copied, and the document is validated with
/// [`validate_document`] at [`MAX_DOCUMENT_DEPTH`]. Returns the owned document and the number
/// of bytes it occupied.
pub(crate) fn read_document(
    bytes: &[u8],
    what: &'static str,
) -> Result<(RawDocumentBuf, usize), WireError> {
    let length = read_i32(bytes, what)?;
    let len = usize::try_from(length)
        .ok()
        .filter(|&n| n >= 5 && n <= bytes.len())
        .ok_or(WireError::DocumentLengthOutOfBounds {
            length,
            remaining: bytes.len(),
        })?;
    let doc = RawDocument::from_bytes(&bytes[..len]).map_err(malformed)?;
    validate_document(doc, MAX_DOCUMENT_DEPTH)?;
    Ok((doc.to_owned(), len))
}

/// Reads the documents that fill `bytes` exactly (a document sequence, an OP_REPLY's
/// documents), each with [`read_document`], counting them against `budget`: the
/// documents one message may hold. Each becomes an allocation of its own, so a frame of
/// empty 5-byte documents would expand several times over in memory (issue 21: 4.7
/// million in a 23.5 MB reply cost 287 MB); with the count bounded, a message costs its
/// bytes plus a bounded overhead per document. Fails with
/// [`WireError::TooManyDocuments`] when the budget runs out.
pub(crate) fn read_documents(
    mut bytes: &[u8],
    what: &'static str,
    budget: &mut DocumentBudget,
) -> Result<Vec<RawDocumentBuf>, WireError> {
    // Grows with documents actually present (each at least 5 bytes), never from a count field.
    let mut documents = Vec::new();
    while !bytes.is_empty() {
        budget.take_one()?;
        let (doc, used) = read_document(bytes, what)?;
        documents.push(doc);
        bytes = &bytes[used..];
    }
    Ok(documents)
}

/// How many more documents the message being decoded may hold: at most
/// [`MAX_WRITE_BATCH_SIZE`](super::MAX_WRITE_BATCH_SIZE), the most one batch carries
/// (OP_MSG spec, Q & A); no reply the driver reads holds more outside its body.
#[derive(Debug)]
pub(crate) struct DocumentBudget {
    left: usize,
}

impl DocumentBudget {
    /// The budget of one message.
    pub(crate) fn per_message() -> DocumentBudget {
        DocumentBudget {
            left: super::MAX_WRITE_BATCH_SIZE,
        }
    }

    fn take_one(&mut self) -> Result<(), WireError> {
        self.left = self
            .left
            .checked_sub(1)
            .ok_or(WireError::TooManyDocuments {
                max: super::MAX_WRITE_BATCH_SIZE,
            })?;
        Ok(())
    }
}

/// Reads a little-endian int32 from the start of `bytes`, or reports `what` as truncated.
pub(crate) fn read_i32(bytes: &[u8], what: &'static str) -> Result<i32, WireError> {
    match bytes {
        [a, b, c, d, ..] => Ok(i32::from_le_bytes([*a, *b, *c, *d])),
        _ => Err(WireError::Truncated(what)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    /// `{"a": {"a": ... {} ...}}` with `levels` embedded documents, built as bytes so that
    /// neither building nor dropping it recurses.
    fn nested_bytes(levels: usize) -> Vec<u8> {
        // Each level is: len(4) type(1) "a\0"(2) <child> terminator(1) = child + 8.
        let total = 5 + 8 * levels;
        let mut out = Vec::with_capacity(total);
        for level in 0..levels {
            let len = (total - 8 * level) as i32;
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&[0x03, b'a', 0]);
        }
        out.extend_from_slice(&[5, 0, 0, 0, 0]);
        out.extend(std::iter::repeat_n(0u8, levels));
        assert_eq!(out.len(), total);
        out
    }

    #[test]
    fn the_lean_walk_passes_nothing_the_bson_crate_refuses() {
        let doc = rawdoc! {
            "s": "text ünïcode", "i": 1, "l": 2i64, "d": 1.5, "b": true, "n": null,
            "arr": [1, "two", { "three": 3 }, [4]], "sub": { "x": { "y": [] } },
            "bin": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![1, 2] },
            "old": bson::Binary { subtype: bson::spec::BinarySubtype::BinaryOld, bytes: vec![3] },
            "oid": bson::oid::ObjectId::from_bytes([7; 12]),
            "code": bson::RawBson::JavaScriptCodeWithScope(bson::raw::RawJavaScriptCodeWithScope {
                code: "f".into(),
                scope: rawdoc! { "v": [1] },
            }),
            "re": bson::Regex { pattern: "^a".to_string().try_into().unwrap(), options: "i".to_string().try_into().unwrap() },
            "ts": bson::Timestamp { time: 1, increment: 2 },
            "dec": bson::Decimal128::from_bytes([1; 16]),
            "date": bson::DateTime::from_millis(5),
        };
        let good = doc.as_bytes();
        let mut passed = 0;
        for at in 0..good.len() {
            for byte in [0x00, 0x01, 0x02, 0x05, 0x7F, 0x80, 0xFF] {
                let mut bytes = good.to_vec();
                bytes[at] = byte;
                let Ok(document) = RawDocument::from_bytes(&bytes) else {
                    continue;
                };
                for max_depth in [0, 1, 2, MAX_DOCUMENT_DEPTH] {
                    let by_the_bson_crate = validate_with_the_bson_crate(document, max_depth);
                    match shape(&bytes, max_depth) {
                        Shape::WellFormed => {
                            passed += 1;
                            assert_eq!(by_the_bson_crate, Ok(()), "byte {at} as {byte:#x}");
                        }
                        Shape::TooDeep => assert_eq!(
                            by_the_bson_crate,
                            Err(WireError::DocumentTooDeep { max_depth }),
                            "byte {at} as {byte:#x}"
                        ),
                        Shape::Malformed => {}
                    }
                    assert_eq!(
                        validate_document(document, max_depth).is_ok(),
                        by_the_bson_crate.is_ok()
                    );
                }
            }
        }
        // The changes the lean walk passes (a string's byte, a number's) were checked.
        assert!(passed > 500, "{passed}");
    }

    #[test]
    fn accepts_a_rich_valid_document() {
        let doc = rawdoc! {
            "s": "text",
            "i": 1,
            "l": 2i64,
            "d": 1.5,
            "b": true,
            "n": null,
            "arr": [1, "two", { "three": 3 }, [4]],
            "sub": { "x": { "y": [] } },
            "bin": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![1, 2, 3] },
            "oid": bson::oid::ObjectId::from_bytes([7; 12]),
            "code": bson::RawBson::JavaScriptCodeWithScope(bson::raw::RawJavaScriptCodeWithScope {
                code: "x".into(),
                scope: rawdoc! { "inner": { "k": 1 } },
            }),
        };
        assert_eq!(validate_document(&doc, MAX_DOCUMENT_DEPTH), Ok(()));
    }

    #[test]
    fn depth_limit_is_exact() {
        let bytes = nested_bytes(3);
        let doc = RawDocument::from_bytes(&bytes).unwrap();
        assert_eq!(validate_document(doc, 3), Ok(()));
        assert_eq!(
            validate_document(doc, 2),
            Err(WireError::DocumentTooDeep { max_depth: 2 })
        );
        let flat = rawdoc! { "a": 1 };
        assert_eq!(validate_document(&flat, 0), Ok(()));
    }

    #[test]
    fn arrays_and_code_with_scope_count_as_levels() {
        let doc = rawdoc! { "a": [[1]] };
        assert_eq!(validate_document(&doc, 2), Ok(()));
        assert_eq!(
            validate_document(&doc, 1),
            Err(WireError::DocumentTooDeep { max_depth: 1 })
        );
        let doc = rawdoc! {
            "c": bson::RawBson::JavaScriptCodeWithScope(bson::raw::RawJavaScriptCodeWithScope {
                code: "f()".into(),
                scope: rawdoc! { "s": { "t": 1 } },
            }),
        };
        assert_eq!(validate_document(&doc, 2), Ok(()));
        assert_eq!(
            validate_document(&doc, 1),
            Err(WireError::DocumentTooDeep { max_depth: 1 })
        );
    }

    #[test]
    fn hostile_deep_nesting_fails_without_stack_overflow() {
        let bytes = nested_bytes(10_000);
        let doc = RawDocument::from_bytes(&bytes).unwrap();
        assert_eq!(
            validate_document(doc, MAX_DOCUMENT_DEPTH),
            Err(WireError::DocumentTooDeep {
                max_depth: MAX_DOCUMENT_DEPTH
            })
        );
        // Even with no effective limit the walk is iterative and succeeds.
        assert_eq!(validate_document(doc, usize::MAX), Ok(()));
    }

    #[test]
    fn corrupted_nested_element_is_malformed() {
        let doc = rawdoc! { "outer": { "inner": { "s": "hello" } } };
        let mut bytes = doc.into_bytes();
        // The top level only checks the nested document's framing; the string length lives
        // two levels down. Point it past the end of its document.
        let pos = bytes
            .windows(6)
            .position(|w| w == [6, 0, 0, 0, b'h', b'e'])
            .expect("string length prefix");
        bytes[pos] = 60;
        let doc = RawDocument::from_bytes(&bytes).unwrap();
        // The top-level iteration alone does not notice.
        assert!(doc.iter_elements().all(|e| e.is_ok()));
        match validate_document(doc, MAX_DOCUMENT_DEPTH) {
            Err(WireError::MalformedDocument(msg)) => assert!(msg.contains("\"s\""), "{msg}"),
            other => panic!("expected MalformedDocument, got {other:?}"),
        }
    }

    #[test]
    fn invalid_utf8_in_nested_string_is_malformed() {
        let doc = rawdoc! { "outer": ["hello"] };
        let mut bytes = doc.into_bytes();
        let pos = bytes.windows(5).position(|w| w == b"hello").unwrap();
        bytes[pos] = 0xff;
        let doc = RawDocument::from_bytes(&bytes).unwrap();
        assert!(matches!(
            validate_document(doc, MAX_DOCUMENT_DEPTH),
            Err(WireError::MalformedDocument(_))
        ));
    }

    #[test]
    fn unknown_element_type_is_malformed() {
        let bytes = [8, 0, 0, 0, 0x42, b'k', 0, 0];
        let doc = RawDocument::from_bytes(&bytes).unwrap();
        assert!(matches!(
            validate_document(doc, MAX_DOCUMENT_DEPTH),
            Err(WireError::MalformedDocument(_))
        ));
    }

    #[test]
    fn read_document_checks_length_before_slicing() {
        let doc = rawdoc! { "a": 1 };
        let mut bytes = doc.as_bytes().to_vec();
        bytes.extend_from_slice(b"trailing");
        let (read, used) = read_document(&bytes, "doc").unwrap();
        assert_eq!(read, doc);
        assert_eq!(used, doc.as_bytes().len());

        let mut huge = bytes.clone();
        huge[0..4].copy_from_slice(&i32::MAX.to_le_bytes());
        assert_eq!(
            read_document(&huge, "doc"),
            Err(WireError::DocumentLengthOutOfBounds {
                length: i32::MAX,
                remaining: bytes.len()
            })
        );
        let mut negative = bytes.clone();
        negative[0..4].copy_from_slice(&(-1i32).to_le_bytes());
        assert_eq!(
            read_document(&negative, "doc"),
            Err(WireError::DocumentLengthOutOfBounds {
                length: -1,
                remaining: bytes.len()
            })
        );
        assert_eq!(
            read_document(&[5, 0], "doc"),
            Err(WireError::Truncated("doc"))
        );
    }
}
