//! BSON bytes to serde, for the documents a driver receives: what the bson crate's own
//! deserializer makes of them, in less time, and never nested deeper than
//! [`MAX_DOCUMENT_DEPTH`].
//!
//! Every value a cursor yields goes through here (`Cursor<T>`, change streams), so this
//! walk is most of a find's client-side cost. The bson crate's deserializer
//! (`bson::deserialize_from_slice`) iterates with `RawIter` and builds a `RawElement`,
//! then a `RawBsonRef`, then a deserializer with cloned options for every element, and
//! it recurses without a depth limit, which is why `wire` validated every reply first.
//! This deserializer reads each element once, straight from the bytes, checks what the
//! bson crate checks (lengths, terminators, UTF-8 of keys and strings) as it goes, and
//! counts the nesting.
//!
//! It presents every value **exactly as the bson crate does** (same serde calls, the same
//! extended-JSON maps for `ObjectId`, `DateTime`, `Timestamp` and the rest), so any user
//! type comes out the same, and a `RawDocument(Buf)` field takes the document's bytes.
//! What it does not present itself it **declines**: bson's other private newtypes (raw
//! arrays, `RawBson`, UUIDs, human-readable and UTF-8-lossy wrappers), the deprecated
//! DBPointer, and any error at all (malformed bytes, a value the type refuses). Then the
//! whole document is deserialized again by `bson::deserialize_from_slice`, so the values
//! and the errors are the bson crate's; the tests compare the two on every case of the
//! BSON corpus.
//!
//! **A stored document is read as stored.** BSON is not extended JSON: since MongoDB 5.0
//! a field name may start with `$`, and `{"n": {"$numberLong": "12"}}` is a document
//! with a string field. A [`Document`] is built from the bytes ([`document_from_slice`],
//! [`from_slice`]: what cursors, `find_one_and_*` and change events use), never through
//! the bson crate's `Document` visitor, which reads such keys as extended JSON (an
//! `Int64` there, an `ObjectId` without its other fields elsewhere, or an error). That
//! visitor is also behind a `Document` or `Bson` *field* of a user's type, where no
//! deserializer can make it keep such a key: there a stored document with one of its
//! extended-JSON keys is **refused** with an error that says so, instead of coming out
//! changed (the bson crate's own deserializer changes it); such a field reads as stored
//! with [`as_stored`], or as a `RawDocumentBuf`.
//!
//! Two answers are its own, never the bson crate's: that refusal, and nesting deeper than
//! [`MAX_DOCUMENT_DEPTH`]: an error, where the bson crate would recurse until the stack
//! runs out.
//!
//! ```
//! use anymongo::bson::{doc, Document};
//!
//! let bytes = anymongo::bson::serialize_to_vec(&doc! { "a": [1, { "b": "c" }] }).unwrap();
//! let document: Document = anymongo::bson_deserializer::deserialize_from_slice(&bytes).unwrap();
//! assert_eq!(document, doc! { "a": [1, { "b": "c" }] });
//! ```

use std::borrow::Cow;
use std::fmt;

use base64::{engine::general_purpose::STANDARD as BASE64, Engine as _};
use bson::{Bson, Document};
use serde::de::value::{BorrowedStrDeserializer, CowStrDeserializer};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess,
    SeqAccess, VariantAccess, Visitor,
};
use serde::{forward_to_deserialize_any, Deserialize};

/// The deepest nesting accepted in a document the driver reads: the server's default
/// `maxBSONDepth`. The top-level document has depth 0, and every embedded document or
/// array adds one level.
pub const MAX_DOCUMENT_DEPTH: usize = 200;

/// Deserializes a `T` from the bytes of one BSON document: the value
/// `bson::deserialize_from_slice` returns, or its error (see the module's documentation),
/// except for a document nested deeper than [`MAX_DOCUMENT_DEPTH`], which fails here
/// without recursing, and a stored document with an extended-JSON key such as `$oid`
/// read as a bson `Document` or `Bson` (the bson crate's visitor would change it), which
/// is refused. A [`Document`] by itself reads as stored with [`from_slice`] or
/// [`document_from_slice`].
///
/// ```
/// #[derive(serde::Deserialize, Debug, PartialEq)]
/// struct Cat {
///     name: String,
///     age: i32,
/// }
///
/// let bytes = anymongo::bson::serialize_to_vec(&anymongo::bson::doc! { "name": "Tom", "age": 3 })
///     .unwrap();
/// let cat: Cat = anymongo::bson_deserializer::deserialize_from_slice(&bytes).unwrap();
/// assert_eq!(cat, Cat { name: "Tom".into(), age: 3 });
/// ```
pub fn deserialize_from_slice<'de, T: de::Deserialize<'de>>(
    bytes: &'de [u8],
) -> bson::error::Result<T> {
    match deserialize_here(bytes) {
        Ok(value) => Ok(value),
        Err(Declined::TooDeep) => Err(too_deep()),
        Err(refused @ Declined::ExtendedJsonKey(_)) => Err(de::Error::custom(refused)),
        // A type may turn any error into one of its own, `TooDeep` too, and this module may
        // decline before it reaches the depth: the bson crate recurses without a limit.
        Err(Declined::ToTheBsonCrate) if !nests_within_limit(bytes) => Err(too_deep()),
        Err(Declined::ToTheBsonCrate) => bson::deserialize_from_slice(bytes),
    }
}

/// Builds a [`Document`] from the bytes of one BSON document, **as stored**: every key
/// and value as the bytes have it, like `Document::try_from(&RawDocument)` (whose
/// document, or error, it returns), and never nested deeper than [`MAX_DOCUMENT_DEPTH`].
/// This is how the driver reads every `Document` a user stored (cursors, `find_one`,
/// `find_one_and_*`, change events).
///
/// BSON is not extended JSON: since MongoDB 5.0 a field name may start with `$`, and a
/// stored `{"n": {"$numberLong": "12"}}` is a document with one string field. Through
/// serde, the bson crate's `Document` and `Bson` visitors read such keys as extended JSON
/// (`n` would become an `Int64`, an `{"a": 1, "$oid": …}` an `ObjectId` without `a`);
/// here each value is made once from its bytes, and no key is interpreted.
///
/// ```
/// use anymongo::bson::{doc, oid::ObjectId, Document};
///
/// let original = doc! { "_id": ObjectId::new(), "n": { "a": 1, "$numberLong": "12" } };
/// let bytes = anymongo::bson::serialize_to_vec(&original).unwrap();
/// let document: Document = anymongo::bson_deserializer::document_from_slice(&bytes).unwrap();
/// assert_eq!(document, original);
/// ```
pub fn document_from_slice(bytes: &[u8]) -> bson::error::Result<Document> {
    match document_elements(bytes).and_then(|elements| build_document(elements, 0)) {
        Ok(document) => Ok(document),
        Err(Declined::ToTheBsonCrate) if nests_within_limit(bytes) => {
            // A DBPointer (which `take_element` does not read) or malformed bytes: the bson
            // crate's raw conversion, which interprets no key either, builds the document
            // or says what is wrong.
            let raw = bson::RawDocument::from_bytes(bytes)?;
            Ok(Document::try_from(raw)?)
        }
        Err(_) => Err(too_deep()),
    }
}

/// Deserializes a `T` from the bytes of one BSON document, reading a [`Document`] as
/// stored ([`document_from_slice`]) and any other type with [`deserialize_from_slice`].
/// This is how cursors and change streams read what they yield; it needs `T`'s `TypeId`,
/// hence `'static`.
///
/// ```
/// use anymongo::bson::{doc, Document};
///
/// let bytes = anymongo::bson::serialize_to_vec(&doc! { "n": { "$date": 5 } }).unwrap();
/// let document: Document = anymongo::bson_deserializer::from_slice(&bytes).unwrap();
/// assert_eq!(document, doc! { "n": { "$date": 5 } });
/// ```
pub fn from_slice<T: DeserializeOwned + 'static>(bytes: &[u8]) -> bson::error::Result<T> {
    let mut built: Option<T> = None;
    match (&mut built as &mut dyn std::any::Any).downcast_mut::<Option<Document>>() {
        Some(slot) => *slot = Some(document_from_slice(bytes)?),
        None => return deserialize_from_slice(bytes),
    }
    built.ok_or_else(|| de::Error::custom("the document was not built"))
}

/// Serde helpers for a field of a user's type that holds a document as stored: a
/// [`Document`] (or any `T` that [`from_slice`] reads) embedded in a larger document,
/// read from its bytes with no key interpreted as extended JSON.
///
/// A `Document` or `Bson` field read through serde cannot hold a key such as `$oid` or
/// `$numberLong` (the bson crate's visitors take them for extended JSON; this crate's
/// deserializer refuses such a document rather than let them); with these helpers it
/// reads as stored.
///
/// ```
/// use anymongo::bson::{doc, Document};
///
/// #[derive(serde::Deserialize)]
/// struct Order {
///     #[serde(deserialize_with = "anymongo::bson_deserializer::as_stored::document")]
///     details: Document,
///     #[serde(default, deserialize_with = "anymongo::bson_deserializer::as_stored::optional")]
///     extra: Option<Document>,
/// }
///
/// let stored = doc! { "details": { "price": { "$numberLong": "12" } }, "extra": null };
/// let bytes = anymongo::bson::serialize_to_vec(&stored).unwrap();
/// let order: Order = anymongo::bson_deserializer::deserialize_from_slice(&bytes).unwrap();
/// assert_eq!(order.details, doc! { "price": { "$numberLong": "12" } });
/// assert_eq!(order.extra, None);
/// ```
pub mod as_stored {
    use super::*;

    /// Reads an embedded document as `T` ([`from_slice`]).
    pub fn document<'de, D, T>(deserializer: D) -> std::result::Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: DeserializeOwned + 'static,
    {
        let raw = bson::RawDocumentBuf::deserialize(deserializer)?;
        from_slice(raw.as_bytes()).map_err(de::Error::custom)
    }

    /// Reads an embedded document as `T` ([`from_slice`]), or null as `None`.
    pub fn optional<'de, D, T>(deserializer: D) -> std::result::Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: DeserializeOwned + 'static,
    {
        Option::<bson::RawDocumentBuf>::deserialize(deserializer)?
            .map(|raw| from_slice(raw.as_bytes()).map_err(de::Error::custom))
            .transpose()
    }
}

fn too_deep() -> bson::error::Error {
    de::Error::custom(format!(
        "the document nests deeper than {MAX_DOCUMENT_DEPTH} levels"
    ))
}

/// The document of `elements`, at `depth`, as stored (as `Document::try_from(&RawDocument)`
/// builds it).
fn build_document(mut elements: &[u8], depth: usize) -> Result<Document> {
    if depth > MAX_DOCUMENT_DEPTH {
        return Err(Declined::TooDeep);
    }
    let mut document = Document::new();
    while let Some((key, parsed)) = take_element(&mut elements)? {
        document.insert(key, build_value(parsed, depth + 1)?);
    }
    Ok(document)
}

/// The values of an array's `elements`, at `depth` (its keys are not checked to be "0",
/// "1", …, as in the bson crate).
fn build_array(mut elements: &[u8], depth: usize) -> Result<Vec<Bson>> {
    if depth > MAX_DOCUMENT_DEPTH {
        return Err(Declined::TooDeep);
    }
    let mut values = Vec::new();
    while let Some((_, parsed)) = take_element(&mut elements)? {
        values.push(build_value(parsed, depth + 1)?);
    }
    Ok(values)
}

/// One value, at `depth` if it is a document, an array or a code with scope's scope.
fn build_value(parsed: Parsed<'_>, depth: usize) -> Result<Bson> {
    Ok(match parsed {
        Parsed::Double(value) => Bson::Double(value),
        Parsed::String(text) => Bson::String(text.to_owned()),
        Parsed::Document { elements, .. } => Bson::Document(build_document(elements, depth)?),
        Parsed::Array(elements) => Bson::Array(build_array(elements, depth)?),
        Parsed::Binary { subtype, data } => Bson::Binary(bson::Binary {
            subtype: subtype.into(),
            bytes: data.to_vec(),
        }),
        Parsed::Undefined => Bson::Undefined,
        Parsed::ObjectId(bytes) => Bson::ObjectId(bson::oid::ObjectId::from_bytes(*bytes)),
        Parsed::Boolean(value) => Bson::Boolean(value),
        Parsed::DateTime(millis) => Bson::DateTime(bson::DateTime::from_millis(millis)),
        Parsed::Null => Bson::Null,
        Parsed::Regex { pattern, options } => {
            // The bson crate keeps a regular expression's options in alphabetical order.
            let mut options: Vec<char> = options.chars().collect();
            options.sort_unstable();
            let cstring = |text: String| {
                bson::raw::CString::try_from(text).map_err(|_| Declined::ToTheBsonCrate)
            };
            Bson::RegularExpression(bson::Regex {
                pattern: cstring(pattern.to_owned())?,
                options: cstring(options.into_iter().collect())?,
            })
        }
        Parsed::Code(code) => Bson::JavaScriptCode(code.to_owned()),
        Parsed::CodeWithScope { code, scope } => {
            Bson::JavaScriptCodeWithScope(bson::JavaScriptCodeWithScope {
                code: code.to_owned(),
                scope: build_document(scope, depth)?,
            })
        }
        Parsed::Symbol(symbol) => Bson::Symbol(symbol.to_owned()),
        Parsed::Int32(value) => Bson::Int32(value),
        Parsed::Timestamp { time, increment } => {
            Bson::Timestamp(bson::Timestamp { time, increment })
        }
        Parsed::Int64(value) => Bson::Int64(value),
        Parsed::Decimal128(bytes) => Bson::Decimal128(bson::Decimal128::from_bytes(bytes)),
        Parsed::MinKey => Bson::MinKey,
        Parsed::MaxKey => Bson::MaxKey,
    })
}

/// Whether the documents, arrays and code-with-scope scopes in `bytes` nest no deeper than
/// [`MAX_DOCUMENT_DEPTH`], read up to the first malformed byte (where the bson crate stops
/// too).
fn nests_within_limit(bytes: &[u8]) -> bool {
    shape(bytes, MAX_DOCUMENT_DEPTH) != Shape::TooDeep
}

/// What [`shape`] found in a document's bytes.
#[derive(Debug, PartialEq)]
pub(crate) enum Shape {
    /// Every element, nested ones included, passed the checks of [`take_element`].
    WellFormed,
    /// Something nests deeper than the limit (before any malformed byte).
    TooDeep,
    /// A malformed byte, or a value this module does not read (a DBPointer is read).
    Malformed,
}

/// Walks every element of the document `bytes` and of the documents, arrays and
/// code-with-scope scopes nested in it, without recursing, with this module's checks
/// (the bson crate's: lengths, terminators, UTF-8), allowing `max_depth` levels of
/// nesting below the top-level document.
pub(crate) fn shape(bytes: &[u8], max_depth: usize) -> Shape {
    let Ok(top) = document_elements(bytes) else {
        return Shape::Malformed;
    };
    // Invariant: stack[i] holds the elements left of a document at depth i.
    let mut stack = vec![top];
    while let Some(elements) = stack.last_mut() {
        match skip_element(elements) {
            Ok(Skipped::End) => {
                stack.pop();
            }
            Ok(Skipped::Value) => {}
            Ok(Skipped::Nested(_)) if stack.len() > max_depth => return Shape::TooDeep,
            Ok(Skipped::Nested(nested)) => stack.push(nested),
            Err(_) => return Shape::Malformed,
        }
    }
    Shape::WellFormed
}

/// What [`skip_element`] passed over.
enum Skipped<'de> {
    End,
    Value,
    /// A document's, an array's or a code-with-scope scope's elements.
    Nested(&'de [u8]),
}

/// Passes over the next element of `elements`, of any type.
fn skip_element<'de>(elements: &mut &'de [u8]) -> Result<Skipped<'de>> {
    if let [0x0C, rest @ ..] = *elements {
        // DBPointer, which `take_element` declines: a string, then an ObjectId.
        let mut rest = rest;
        take_cstring(&mut rest)?;
        take_string(&mut rest)?;
        take::<12>(&mut rest)?;
        *elements = rest;
        return Ok(Skipped::Value);
    }
    Ok(match take_element(elements)? {
        None => Skipped::End,
        Some((
            _,
            Parsed::Document {
                elements: nested, ..
            }
            | Parsed::Array(nested)
            | Parsed::CodeWithScope { scope: nested, .. },
        )) => Skipped::Nested(nested),
        Some(_) => Skipped::Value,
    })
}

/// This module's own attempt, without the bson crate's second go.
fn deserialize_here<'de, T: de::Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, Declined> {
    let elements = document_elements(bytes)?;
    T::deserialize(Value {
        parsed: Parsed::Document { bytes, elements },
        depth: 0,
    })
}

/// Why this deserializer gave up. Any error serde raises through it (a type's own
/// refusal included) is [`Declined::ToTheBsonCrate`]: the bson crate then does the whole
/// document, and its error carries its message.
#[derive(Debug, PartialEq)]
enum Declined {
    ToTheBsonCrate,
    TooDeep,
    /// A stored document with the key `EXTENDED_JSON_KEYS[i]` was to be read as a bson
    /// `Document` or `Bson`, whose visitor would take it for extended JSON: refused, not
    /// handed to the bson crate (which would do just that). An index, so that this
    /// error (in every `Result` of the walk) stays two bytes.
    ExtendedJsonKey(u8),
}

impl fmt::Display for Declined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Declined::ToTheBsonCrate => {
                f.write_str("declined: the bson crate deserializes this document")
            }
            Declined::TooDeep => f.write_str("the document nests too deep"),
            Declined::ExtendedJsonKey(i) => write!(
                f,
                "a stored document has the field `{}`, which the bson crate's `Document` \
                 and `Bson` would read as extended JSON, not as stored: read it as a \
                 `Document` at the top level, a `RawDocumentBuf`, or a field with \
                 `anymongo::bson_deserializer::as_stored`",
                EXTENDED_JSON_KEYS.get(usize::from(*i)).unwrap_or(&"$")
            ),
        }
    }
}

/// The keys the bson crate's `Bson` visitor (behind `Document`'s and `Bson`'s
/// `Deserialize`) reads as extended JSON wherever they appear in a map, dropping the
/// map's other fields (bson 3.1, `de/serde.rs`, `BsonVisitor::visit_map`).
const EXTENDED_JSON_KEYS: [&str; 18] = [
    "$oid",
    "$symbol",
    "$numberInt",
    "$numberLong",
    "$numberDouble",
    "$binary",
    "$uuid",
    "$code",
    "$scope",
    "$timestamp",
    "$regularExpression",
    "$dbPointer",
    "$date",
    "$maxKey",
    "$minKey",
    "$undefined",
    "$numberDecimal",
    "$numberDecimalBytes",
];

/// The name of the bson crate's private newtype around a `RawDocument` or
/// `RawDocumentBuf` (bson 3.1, `raw.rs`, `RAW_DOCUMENT_NEWTYPE`).
const RAW_DOCUMENT_NEWTYPE: &str = "$__private__bson_RawDocument";

/// The type of the bson crate's `Bson` visitor (bson 3.1, `de/serde.rs`), which
/// `Document` and `Bson` deserialize with. The type is private, so it is told by its name:
/// the unit tests fail if a compiler or a bson release names it otherwise.
const BSON_VISITOR: &str = "bson::de::serde::BsonVisitor";

/// Whether `V` is the bson crate's `Bson` visitor ([`BSON_VISITOR`]): a comparison of
/// two constant strings.
fn is_bson_visitor<'de, V: Visitor<'de>>() -> bool {
    std::any::type_name::<V>() == BSON_VISITOR
}

impl std::error::Error for Declined {}

impl de::Error for Declined {
    fn custom<T: fmt::Display>(_message: T) -> Self {
        Declined::ToTheBsonCrate
    }
}

type Result<T, E = Declined> = std::result::Result<T, E>;

/// The elements of the document `bytes` is exactly (its length prefix and terminator
/// checked, as `RawDocument::from_bytes` does), without the two.
fn document_elements(bytes: &[u8]) -> Result<&[u8]> {
    let (length, rest) = bytes
        .split_first_chunk::<4>()
        .ok_or(Declined::ToTheBsonCrate)?;
    match (
        usize::try_from(i32::from_le_bytes(*length)),
        rest.split_last(),
    ) {
        (Ok(length), Some((0, elements))) if length >= 5 && length == bytes.len() => Ok(elements),
        _ => Err(Declined::ToTheBsonCrate),
    }
}

/// One element's value, read and checked (the bson crate's `RawElement::value`).
#[derive(Clone, Copy)]
enum Parsed<'de> {
    Double(f64),
    String(&'de str),
    /// An embedded document: all its `bytes`, and its `elements` (without its length and
    /// terminator).
    Document {
        bytes: &'de [u8],
        elements: &'de [u8],
    },
    Array(&'de [u8]),
    Binary {
        subtype: u8,
        data: &'de [u8],
    },
    Undefined,
    ObjectId(&'de [u8; 12]),
    Boolean(bool),
    DateTime(i64),
    Null,
    Regex {
        pattern: &'de str,
        options: &'de str,
    },
    Code(&'de str),
    /// The code, and the scope's elements.
    CodeWithScope {
        code: &'de str,
        scope: &'de [u8],
    },
    Symbol(&'de str),
    Int32(i32),
    Timestamp {
        time: u32,
        increment: u32,
    },
    Int64(i64),
    Decimal128([u8; 16]),
    MinKey,
    MaxKey,
}

/// Takes the first `N` bytes of `bytes`.
fn take<'de, const N: usize>(bytes: &mut &'de [u8]) -> Result<&'de [u8; N]> {
    let (head, rest) = bytes
        .split_first_chunk::<N>()
        .ok_or(Declined::ToTheBsonCrate)?;
    *bytes = rest;
    Ok(head)
}

/// Takes a NUL-terminated UTF-8 string (a key, a regular expression's parts).
fn take_cstring<'de>(bytes: &mut &'de [u8]) -> Result<&'de str> {
    let end = bytes
        .iter()
        .position(|&byte| byte == 0)
        .ok_or(Declined::ToTheBsonCrate)?;
    let text = utf8(&bytes[..end])?;
    *bytes = &bytes[end + 1..];
    Ok(text)
}

fn utf8(bytes: &[u8]) -> Result<&str> {
    simdutf8::basic::from_utf8(bytes).map_err(|_| Declined::ToTheBsonCrate)
}

/// Takes a length-prefixed size (a string's, a binary's), which must fit what is left.
fn take_length(bytes: &mut &[u8]) -> Result<usize> {
    let length = usize::try_from(i32::from_le_bytes(*take::<4>(bytes)?))
        .map_err(|_| Declined::ToTheBsonCrate)?;
    if length > bytes.len() {
        return Err(Declined::ToTheBsonCrate);
    }
    Ok(length)
}

/// Takes a BSON string: its length (at least one), its bytes, a NUL.
fn take_string<'de>(bytes: &mut &'de [u8]) -> Result<&'de str> {
    let length = take_length(bytes)?;
    let (text, rest) = bytes.split_at(length);
    match text.split_last() {
        Some((0, text)) => {
            *bytes = rest;
            utf8(text)
        }
        _ => Err(Declined::ToTheBsonCrate),
    }
}

/// Takes an embedded document or array and returns its elements.
fn take_document<'de>(bytes: &mut &'de [u8]) -> Result<&'de [u8]> {
    document_elements(take_framed(bytes)?)
}

/// Takes a value whose length prefix counts itself (a document, a code with scope): the
/// whole of it, prefix included.
fn take_framed<'de>(bytes: &mut &'de [u8]) -> Result<&'de [u8]> {
    let length = usize::try_from(i32::from_le_bytes(
        *bytes.first_chunk::<4>().ok_or(Declined::ToTheBsonCrate)?,
    ))
    .map_err(|_| Declined::ToTheBsonCrate)?;
    let framed = bytes.get(..length).ok_or(Declined::ToTheBsonCrate)?;
    *bytes = &bytes[length..];
    Ok(framed)
}

/// Takes the next element of a document's `elements`: its key and its value.
fn take_element<'de>(elements: &mut &'de [u8]) -> Result<Option<(&'de str, Parsed<'de>)>> {
    let Some((&kind, rest)) = elements.split_first() else {
        return Ok(None);
    };
    *elements = rest;
    let key = take_cstring(elements)?;
    let value = match kind {
        0x01 => Parsed::Double(f64::from_le_bytes(*take(elements)?)),
        0x02 => Parsed::String(take_string(elements)?),
        0x03 => {
            let bytes = take_framed(elements)?;
            Parsed::Document {
                bytes,
                elements: document_elements(bytes)?,
            }
        }
        0x04 => Parsed::Array(take_document(elements)?),
        0x05 => {
            let length = take_length(elements)?;
            let [subtype] = *take::<1>(elements)?;
            let data = elements.get(..length).ok_or(Declined::ToTheBsonCrate)?;
            *elements = &elements[length..];
            // The old binary subtype repeats the length inside.
            let data = match (subtype, data.split_first_chunk::<4>()) {
                (0x02, Some((inner, data)))
                    if usize::try_from(i32::from_le_bytes(*inner)) == Ok(data.len()) =>
                {
                    data
                }
                (0x02, _) => return Err(Declined::ToTheBsonCrate),
                _ => data,
            };
            Parsed::Binary { subtype, data }
        }
        0x06 => Parsed::Undefined,
        0x07 => Parsed::ObjectId(take(elements)?),
        0x08 => match take::<1>(elements)? {
            [0] => Parsed::Boolean(false),
            [1] => Parsed::Boolean(true),
            _ => return Err(Declined::ToTheBsonCrate),
        },
        0x09 => Parsed::DateTime(i64::from_le_bytes(*take(elements)?)),
        0x0A => Parsed::Null,
        0x0B => Parsed::Regex {
            pattern: take_cstring(elements)?,
            options: take_cstring(elements)?,
        },
        0x0D => Parsed::Code(take_string(elements)?),
        0x0F => {
            // Its whole length (at least 14), then the code and the scope, which must
            // fill it exactly.
            let whole = take_framed(elements)?;
            if whole.len() < 14 {
                return Err(Declined::ToTheBsonCrate);
            }
            let mut rest = &whole[4..];
            let code = take_string(&mut rest)?;
            Parsed::CodeWithScope {
                code,
                scope: document_elements(rest)?,
            }
        }
        0x0E => Parsed::Symbol(take_string(elements)?),
        0x10 => Parsed::Int32(i32::from_le_bytes(*take(elements)?)),
        0x11 => {
            // The increment is the low half, the seconds the high half.
            let increment = u32::from_le_bytes(*take(elements)?);
            let time = u32::from_le_bytes(*take(elements)?);
            Parsed::Timestamp { time, increment }
        }
        0x12 => Parsed::Int64(i64::from_le_bytes(*take(elements)?)),
        0x13 => Parsed::Decimal128(*take(elements)?),
        0xFF => Parsed::MinKey,
        0x7F => Parsed::MaxKey,
        // DBPointer (0x0C) and anything unknown.
        _ => return Err(Declined::ToTheBsonCrate),
    };
    Ok(Some((key, value)))
}

/// One value (the bson crate's `RawDeserializer` without a hint), with the depth it has
/// if it is a document or an array.
struct Value<'de> {
    parsed: Parsed<'de>,
    depth: usize,
}

impl<'de> Value<'de> {
    /// The elements of the document or array this value is.
    fn nested(&self, elements: &'de [u8]) -> Result<Elements<'de>> {
        if self.depth > MAX_DOCUMENT_DEPTH {
            return Err(Declined::TooDeep);
        }
        Ok(Elements {
            rest: elements,
            depth: self.depth,
            value: None,
            to_bson: false,
        })
    }
}

impl<'de> Deserializer<'de> for Value<'de> {
    type Error = Declined;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.parsed {
            Parsed::Double(value) => visitor.visit_f64(value),
            Parsed::String(text) => visitor.visit_borrowed_str(text),
            Parsed::Document { elements, .. } => {
                let mut nested = self.nested(elements)?;
                nested.to_bson = is_bson_visitor::<V>();
                visitor.visit_map(nested)
            }
            Parsed::Array(elements) => visitor.visit_seq(self.nested(elements)?),
            Parsed::Binary { subtype: 0, data } => visitor.visit_borrowed_bytes(data),
            Parsed::Binary { subtype, data } => visitor.visit_map(Wrapped::new(
                "$binary",
                Ext::Map(ExtMap::two(
                    [
                        ("subType", Scalar::String(format!("{subtype:02x}"))),
                        ("base64", Scalar::String(BASE64.encode(data))),
                    ],
                    NewtypeStruct::AsAny,
                )),
            )),
            Parsed::Undefined => visitor.visit_map(Wrapped::new("$undefined", Scalar::Bool(true))),
            Parsed::ObjectId(bytes) => visitor.visit_map(Wrapped::new(
                "$oid",
                Scalar::String(bson::oid::ObjectId::from_bytes(*bytes).to_hex()),
            )),
            Parsed::Boolean(value) => visitor.visit_bool(value),
            Parsed::DateTime(millis) => visitor.visit_map(Wrapped::new(
                "$date",
                Ext::Map(ExtMap::one(
                    "$numberLong",
                    Scalar::Millis(millis.to_string()),
                )),
            )),
            Parsed::Null => visitor.visit_unit(),
            Parsed::Regex { pattern, options } => visitor.visit_map(Wrapped::new(
                "$regularExpression",
                Ext::Map(ExtMap::two(
                    [
                        ("pattern", Scalar::Str(pattern)),
                        ("options", Scalar::Str(options)),
                    ],
                    NewtypeStruct::Visited,
                )),
            )),
            Parsed::Code(code) => visitor.visit_map(Wrapped::new("$code", Scalar::Str(code))),
            Parsed::CodeWithScope { code, scope } => visitor.visit_map(ExtMap::two(
                [
                    ("$code", Scalar::Str(code)),
                    ("$scope", Scalar::Scope(self.nested(scope)?)),
                ],
                NewtypeStruct::Visited,
            )),
            Parsed::Symbol(symbol) => {
                visitor.visit_map(Wrapped::new("$symbol", Scalar::Str(symbol)))
            }
            Parsed::Int32(value) => visitor.visit_i32(value),
            Parsed::Timestamp { time, increment } => visitor.visit_map(Wrapped::new(
                "$timestamp",
                Ext::Map(ExtMap::two(
                    [("t", Scalar::U32(time)), ("i", Scalar::U32(increment))],
                    NewtypeStruct::AsAny,
                )),
            )),
            Parsed::Int64(value) => visitor.visit_i64(value),
            Parsed::Decimal128(bytes) => {
                visitor.visit_map(Wrapped::new("$numberDecimalBytes", Scalar::Bytes(bytes)))
            }
            Parsed::MinKey => visitor.visit_map(Wrapped::new("$minKey", Scalar::I32(1))),
            Parsed::MaxKey => visitor.visit_map(Wrapped::new("$maxKey", Scalar::I32(1))),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.parsed {
            Parsed::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        match self.parsed {
            Parsed::String(text) => {
                let variant: CowStrDeserializer<'de, Declined> =
                    Cow::Borrowed(text).into_deserializer();
                visitor.visit_enum(variant)
            }
            Parsed::Document { elements, .. } => visitor.visit_enum(self.nested(elements)?),
            _ => Err(Declined::ToTheBsonCrate),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.parsed {
            Parsed::ObjectId(bytes) => visitor.visit_borrowed_bytes(bytes),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        match self.parsed {
            // A `RawDocument(Buf)` takes a document's bytes as a generic binary (bson 3.1,
            // `raw/serde.rs`, `OwnedOrBorrowedRawDocument`): as stored, without a copy.
            Parsed::Document { bytes, .. } if name == RAW_DOCUMENT_NEWTYPE => {
                visitor.visit_borrowed_bytes(bytes)
            }
            // The bson crate's other private newtypes ("$__bson_private_uuid", …) change how
            // it presents the value.
            _ if name.starts_with("$__") => Err(Declined::ToTheBsonCrate),
            _ => visitor.visit_newtype_struct(self),
        }
    }

    fn is_human_readable(&self) -> bool {
        false
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 u8 u16 u32 u64 f32 f64 char str string byte_buf unit
        unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

/// The elements of a document or array being visited (the bson crate's `DocumentAccess`),
/// `depth` being the document's own; its values are one level down.
struct Elements<'de> {
    rest: &'de [u8],
    depth: usize,
    /// The value of the key last visited.
    value: Option<Parsed<'de>>,
    /// Whether a stored document is being read as a bson `Document` or `Bson`
    /// ([`is_bson_visitor`]), whose visitor takes [`EXTENDED_JSON_KEYS`] for extended
    /// JSON.
    to_bson: bool,
}

impl<'de> Elements<'de> {
    fn value(&self) -> Result<Value<'de>> {
        let parsed = self.value.ok_or(Declined::ToTheBsonCrate)?;
        Ok(Value {
            parsed,
            depth: self.depth + 1,
        })
    }
}

impl<'de> MapAccess<'de> for Elements<'de> {
    type Error = Declined;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let Some((key, value)) = take_element(&mut self.rest)? else {
            self.value = None;
            return Ok(None);
        };
        if self.to_bson && key.starts_with('$') {
            if let Some(i) = EXTENDED_JSON_KEYS.iter().position(|known| *known == key) {
                return Err(Declined::ExtendedJsonKey(i as u8));
            }
        }
        self.value = Some(value);
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value> {
        seed.deserialize(self.value()?)
    }
}

impl<'de> SeqAccess<'de> for Elements<'de> {
    type Error = Declined;

    fn next_element_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<Option<S::Value>> {
        // An array's keys are not checked to be "0", "1", …, as in the bson crate.
        match take_element(&mut self.rest)? {
            None => Ok(None),
            Some((_, parsed)) => seed
                .deserialize(Value {
                    parsed,
                    depth: self.depth + 1,
                })
                .map(Some),
        }
    }
}

/// An enum as a document: its first key names the variant, and its value is the
/// variant's content (other keys are not read, as in the bson crate).
impl<'de> EnumAccess<'de> for Elements<'de> {
    type Error = Declined;
    type Variant = Self;

    fn variant_seed<S: DeserializeSeed<'de>>(mut self, seed: S) -> Result<(S::Value, Self)> {
        let variant = self.next_key_seed(seed)?.ok_or(Declined::ToTheBsonCrate)?;
        Ok((variant, self))
    }
}

impl<'de> VariantAccess<'de> for Elements<'de> {
    type Error = Declined;

    fn unit_variant(self) -> Result<()> {
        Err(Declined::ToTheBsonCrate)
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value> {
        seed.deserialize(self.value()?)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        self.value()?.deserialize_seq(visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.value()?.deserialize_map(visitor)
    }
}

/// What a value's `deserialize_newtype_struct` does in the bson crate: some of its
/// extended-JSON parts visit a newtype, others treat it as `deserialize_any`.
#[derive(Clone, Copy)]
enum NewtypeStruct {
    Visited,
    AsAny,
}

/// A scalar of the extended-JSON map in which the bson crate presents one of its own
/// types, with the serde call the bson crate makes for it.
enum Scalar<'de> {
    /// `visit_borrowed_str` (code, symbol, a regular expression's parts).
    Str(&'de str),
    /// `visit_string` (an `ObjectId`'s hex, a binary's subtype in hex and its base64;
    /// newtypes as any).
    String(String),
    /// `visit_string` of a `DateTime`'s milliseconds (newtypes visited).
    Millis(String),
    /// `visit_u32` (a timestamp's parts; newtypes as any).
    U32(u32),
    /// `visit_i32` (min and max key).
    I32(i32),
    /// `visit_bool` (undefined).
    Bool(bool),
    /// `visit_bytes` (Decimal128; newtypes as any).
    Bytes([u8; 16]),
    /// `visit_map` of a code with scope's scope (newtypes visited).
    Scope(Elements<'de>),
}

/// The value under the key of that map: a scalar, or a map of up to two scalars.
enum Ext<'de> {
    Scalar(Scalar<'de>),
    Map(ExtMap<'de>),
}

impl<'de> From<Scalar<'de>> for Ext<'de> {
    fn from(scalar: Scalar<'de>) -> Self {
        Ext::Scalar(scalar)
    }
}

impl Ext<'_> {
    fn newtype_struct(&self) -> NewtypeStruct {
        match self {
            Ext::Scalar(Scalar::String(_) | Scalar::U32(_) | Scalar::Bytes(_)) => {
                NewtypeStruct::AsAny
            }
            Ext::Scalar(_) => NewtypeStruct::Visited,
            Ext::Map(map) => map.newtype_struct,
        }
    }
}

impl<'de> Deserializer<'de> for Ext<'de> {
    type Error = Declined;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self {
            Ext::Scalar(Scalar::Str(text)) => visitor.visit_borrowed_str(text),
            Ext::Scalar(Scalar::String(text) | Scalar::Millis(text)) => visitor.visit_string(text),
            Ext::Scalar(Scalar::U32(value)) => visitor.visit_u32(value),
            Ext::Scalar(Scalar::I32(value)) => visitor.visit_i32(value),
            Ext::Scalar(Scalar::Bool(value)) => visitor.visit_bool(value),
            Ext::Scalar(Scalar::Bytes(bytes)) => visitor.visit_bytes(&bytes),
            Ext::Scalar(Scalar::Scope(mut elements)) => {
                elements.to_bson = is_bson_visitor::<V>();
                visitor.visit_map(elements)
            }
            Ext::Map(map) => visitor.visit_map(map),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        match self.newtype_struct() {
            NewtypeStruct::Visited => visitor.visit_newtype_struct(self),
            NewtypeStruct::AsAny => self.deserialize_any(visitor),
        }
    }

    fn is_human_readable(&self) -> bool {
        false
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 u8 u16 u32 u64 f32 f64 char str string bytes byte_buf option
        unit unit_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// The one-key map around a bson type: `{"$oid": …}`, `{"$date": …}`, ….
struct Wrapped<'de> {
    key: &'static str,
    value: Option<Ext<'de>>,
    key_given: bool,
}

impl<'de> Wrapped<'de> {
    fn new(key: &'static str, value: impl Into<Ext<'de>>) -> Self {
        Wrapped {
            key,
            value: Some(value.into()),
            key_given: false,
        }
    }
}

impl<'de> MapAccess<'de> for Wrapped<'de> {
    type Error = Declined;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if std::mem::replace(&mut self.key_given, true) {
            return Ok(None);
        }
        seed.deserialize(Key(self.key)).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value> {
        seed.deserialize(self.value.take().ok_or(Declined::ToTheBsonCrate)?)
    }
}

/// The inner map of a bson type: `{"$numberLong": …}`, `{"t": …, "i": …}`, ….
struct ExtMap<'de> {
    parts: [Option<(&'static str, Scalar<'de>)>; 2],
    next: usize,
    newtype_struct: NewtypeStruct,
    /// The value of the key last given.
    value: Option<Scalar<'de>>,
}

impl<'de> ExtMap<'de> {
    fn one(key: &'static str, value: Scalar<'de>) -> Self {
        ExtMap {
            parts: [Some((key, value)), None],
            next: 0,
            newtype_struct: NewtypeStruct::Visited,
            value: None,
        }
    }

    fn two(parts: [(&'static str, Scalar<'de>); 2], newtype_struct: NewtypeStruct) -> Self {
        ExtMap {
            parts: parts.map(Some),
            next: 0,
            newtype_struct,
            value: None,
        }
    }
}

impl<'de> MapAccess<'de> for ExtMap<'de> {
    type Error = Declined;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let Some((key, value)) = self.parts.get_mut(self.next).and_then(Option::take) else {
            return Ok(None);
        };
        self.next += 1;
        self.value = Some(value);
        seed.deserialize(Key(key)).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value> {
        seed.deserialize(Ext::Scalar(
            self.value.take().ok_or(Declined::ToTheBsonCrate)?,
        ))
    }
}

/// A key of an extended-JSON map (the bson crate's `FieldDeserializer`).
struct Key(&'static str);

impl<'de> Deserializer<'de> for Key {
    type Error = Declined;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_borrowed_str(self.0)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn is_human_readable(&self) -> bool {
        false
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 u8 u16 u32 u64 f32 f64 char str string bytes byte_buf option
        unit unit_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::oid::ObjectId;
    use bson::spec::BinarySubtype;
    use bson::{
        doc, Binary, Bson, DateTime, Decimal128, Document, RawDocumentBuf, Regex, Timestamp,
    };
    use serde::Deserialize;
    use std::collections::BTreeMap;

    fn bytes_of(document: &Document) -> Vec<u8> {
        bson::serialize_to_vec(document).unwrap()
    }

    /// Every type this module presents itself, nested in documents and arrays.
    fn every_presented_type() -> Document {
        let uuid = bson::Uuid::parse_str("00112233-4455-6677-8899-aabbccddeeff").unwrap();
        doc! {
            "uuid": uuid,
            "user binary": Binary { subtype: BinarySubtype::UserDefined(0x80), bytes: vec![1, 2, 3, 4, 5] },
            "old binary": Binary { subtype: BinarySubtype::BinaryOld, bytes: vec![9, 8] },
            "scope": bson::JavaScriptCodeWithScope { code: "x".into(), scope: doc! { "x": { "y": [1] } } },
            "double": 1.5,
            "string": "text with ünïcode",
            "document": { "a": 1, "b": { "c": [1, 2, { "d": null }] } },
            "array": [1, "two", 3.0, [4], { "five": 5 }],
            "binary": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2, 3] },
            "undefined": Bson::Undefined,
            "oid": ObjectId::parse_str("0123456789abcdef01234567").unwrap(),
            "bool": true,
            "date": DateTime::from_millis(1_700_000_000_123),
            "null": null,
            "regex": Regex { pattern: "^a.c$".to_string().try_into().unwrap(), options: "im".to_string().try_into().unwrap() },
            "code": Bson::JavaScriptCode("function () {}".into()),
            "symbol": Bson::Symbol("sym".into()),
            "int32": 32,
            "timestamp": Timestamp { time: 7, increment: 9 },
            "int64": 64i64,
            "decimal": Decimal128::from_bytes([3; 16]),
            "min": Bson::MinKey,
            "max": Bson::MaxKey,
        }
    }

    /// `T` from `bytes` here, without the bson crate's second go, must equal the bson
    /// crate's `T`.
    fn presented_here_as_bson_does<'de, T>(bytes: &'de [u8])
    where
        T: Deserialize<'de> + PartialEq + fmt::Debug,
    {
        let ours = deserialize_here::<T>(bytes);
        let theirs = bson::deserialize_from_slice::<T>(bytes).unwrap();
        assert_eq!(ours, Ok(theirs));
    }

    #[test]
    fn documents_and_bson_values_come_out_as_from_the_bson_crate() {
        let bytes = bytes_of(&every_presented_type());
        presented_here_as_bson_does::<Document>(&bytes);
        presented_here_as_bson_does::<Bson>(&bytes);
        presented_here_as_bson_does::<BTreeMap<String, Bson>>(&bytes);
        presented_here_as_bson_does::<Option<Document>>(&bytes);
        let document: Document = deserialize_from_slice(&bytes).unwrap();
        assert_eq!(document, every_presented_type());
    }

    /// A `Document` built by `document_from_slice` without the serde path behind it.
    fn built_here(bytes: &[u8]) -> Result<Document> {
        document_elements(bytes).and_then(|elements| build_document(elements, 0))
    }

    #[test]
    fn documents_are_built_as_the_bson_crate_deserializes_them() {
        let mut every_type = every_presented_type();
        every_type.insert(
            "sorted",
            Regex {
                pattern: "p".to_string().try_into().unwrap(),
                options: "imx".to_string().try_into().unwrap(),
            },
        );
        let mut bytes = bytes_of(&every_type);
        // The bson crate sorts a regular expression's options as it reads them (and as it
        // writes them, so these bytes are made by hand).
        let at = bytes.windows(4).position(|w| w == b"imx\0").unwrap();
        bytes[at..at + 3].copy_from_slice(b"xmi");
        let theirs = bson::deserialize_from_slice::<Document>(&bytes).unwrap();
        assert_eq!(built_here(&bytes), Ok(theirs.clone()));
        assert_eq!(document_from_slice(&bytes).unwrap(), theirs);
        // What a cursor of `Document`s does with a batch's document.
        let raw = RawDocumentBuf::from_bytes(bytes).unwrap();
        let document: Document = crate::cursor::deserialize(&raw).unwrap();
        assert_eq!(document, theirs);
    }

    /// Documents with `$`-prefixed field names (MongoDB 5.0+) that the bson crate's
    /// `Document` visitor would take for extended JSON, at the top level, nested, in
    /// arrays, beside ordinary fields, with values no extended JSON allows, and one of
    /// every key that visitor interprets.
    fn dollar_documents() -> Vec<Document> {
        let oid = ObjectId::parse_str("0123456789abcdef01234567").unwrap();
        let mut every_key = Document::new();
        for key in EXTENDED_JSON_KEYS {
            every_key.insert("n", doc! { key: "x" });
            every_key.insert(format!("n{key}"), doc! { "a": 1, key: { "b": [key] } });
        }
        vec![
            doc! { "_id": 1, "n": { "$numberLong": "12" } },
            doc! { "n": { "$date": 5 } },
            doc! { "n": { "$oid": oid.to_hex() } },
            doc! { "n": { "a": 1, "$numberLong": "12" } },
            doc! { "n": { "$oid": "not-an-oid" } },
            doc! { "$numberLong": "12", "$oid": 3, "a": [{ "$date": { "$numberLong": "x" } }] },
            doc! { "a": [[{ "x": 1, "$date": { "$numberLong": "5" } }], { "$uuid": 1 }] },
            doc! { "$db": "admin", "scope": bson::JavaScriptCodeWithScope { code: "c".into(), scope: doc! { "$oid": 1 } } },
            every_key,
        ]
    }

    #[test]
    fn documents_with_dollar_keys_are_read_as_stored() {
        for document in dollar_documents() {
            let bytes = bytes_of(&document);
            let as_stored =
                Document::try_from(bson::RawDocument::from_bytes(&bytes).unwrap()).unwrap();
            assert_eq!(as_stored, document);
            assert_eq!(built_here(&bytes), Ok(document.clone()));
            assert_eq!(document_from_slice(&bytes).unwrap(), document);
            assert_eq!(from_slice::<Document>(&bytes).unwrap(), document);
            let raw = RawDocumentBuf::from_bytes(bytes.clone()).unwrap();
            let read: Document = crate::cursor::deserialize(&raw).unwrap();
            assert_eq!(bytes_of(&read), bytes, "{document}");
        }
    }

    #[test]
    fn a_document_this_module_does_not_build_is_still_read_as_stored() {
        // A DBPointer (which `take_element` leaves to the bson crate) beside a field the
        // bson crate's visitor would read as an ObjectId.
        let mut bytes = b"\0\0\0\0\x0cp\0\x02\0\0\0n\0".to_vec();
        bytes.extend_from_slice(&[7; 12]);
        bytes.extend_from_slice(&bytes_of(&doc! { "n": { "$oid": "not-an-oid" } })[4..]);
        let length = i32::try_from(bytes.len()).unwrap();
        bytes[..4].copy_from_slice(&length.to_le_bytes());
        assert_eq!(built_here(&bytes), Err(Declined::ToTheBsonCrate));
        let as_stored = Document::try_from(bson::RawDocument::from_bytes(&bytes).unwrap()).unwrap();
        assert_eq!(document_from_slice(&bytes).unwrap(), as_stored);
        assert_eq!(
            as_stored.get_document("n").unwrap(),
            &doc! { "$oid": "not-an-oid" }
        );
        // Malformed bytes: the bson crate's raw error.
        let cut = &bytes[..bytes.len() - 3];
        let theirs = bson::RawDocument::from_bytes(cut).map(|_| ()).unwrap_err();
        assert_eq!(
            document_from_slice(cut).unwrap_err().to_string(),
            theirs.to_string()
        );
    }

    #[test]
    fn bson_fields_of_a_typed_value_refuse_what_they_would_misread() {
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct WithDocument {
            n: Document,
        }
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct WithBson {
            n: Bson,
        }
        for document in [
            doc! { "n": { "$numberLong": "12" } },
            doc! { "n": { "a": 1, "$date": 5 } },
            doc! { "n": { "a": [{ "$oid": "not-an-oid" }] } },
            doc! { "n": { "s": bson::JavaScriptCodeWithScope { code: "c".into(), scope: doc! { "$oid": 1 } } } },
        ] {
            let bytes = bytes_of(&document);
            for error in [
                deserialize_from_slice::<WithDocument>(&bytes).unwrap_err(),
                deserialize_from_slice::<WithBson>(&bytes).unwrap_err(),
                deserialize_from_slice::<BTreeMap<String, Bson>>(&bytes).unwrap_err(),
                deserialize_from_slice::<Bson>(&bytes).unwrap_err(),
            ] {
                assert!(
                    error.to_string().contains("as extended JSON"),
                    "{document}: {error}"
                );
            }
        }
        // Keys the visitor keeps as they are, and maps that are not bson's, read as
        // stored.
        let bytes = bytes_of(&doc! { "n": { "$gt": 1, "$db": "x" } });
        let read: WithDocument = deserialize_from_slice(&bytes).unwrap();
        assert_eq!(read.n, doc! { "$gt": 1, "$db": "x" });
        let bytes = bytes_of(&doc! { "$numberLong": "12", "n": { "$oid": "x" } });
        let read: BTreeMap<String, BTreeMap<String, String>> =
            deserialize_from_slice(&bytes).unwrap_or_default();
        assert!(read.is_empty(), "a string is not a map");
        let read: BTreeMap<String, Bson> =
            deserialize_from_slice(&bytes_of(&doc! { "$numberLong": "12" })).unwrap();
        assert_eq!(read["$numberLong"], Bson::String("12".into()));
        // Real values of bson's types are still presented as the bson crate does.
        let oid = ObjectId::new();
        let read: WithBson = deserialize_from_slice(&bytes_of(&doc! { "n": oid })).unwrap();
        assert_eq!(read.n, Bson::ObjectId(oid));
    }

    #[test]
    fn as_stored_reads_embedded_documents_as_stored() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct AsStored {
            #[serde(deserialize_with = "as_stored::document")]
            n: Document,
            #[serde(default, deserialize_with = "as_stored::optional")]
            m: Option<Document>,
            #[serde(default, deserialize_with = "as_stored::optional")]
            absent: Option<Document>,
        }
        for n in dollar_documents() {
            let bytes = bytes_of(&doc! { "n": n.clone(), "m": n.clone() });
            let expected = AsStored {
                n: n.clone(),
                m: Some(n.clone()),
                absent: None,
            };
            // Here, without the bson crate (whose deserializer of a `Document` value
            // reads `$` keys as extended JSON even for a raw document).
            assert_eq!(deserialize_here::<AsStored>(&bytes), Ok(expected));
        }
        let read: AsStored =
            deserialize_from_slice(&bytes_of(&doc! { "n": {}, "m": null })).unwrap();
        assert_eq!(read.m, None);
    }

    #[test]
    fn typed_fields_come_out_as_from_the_bson_crate() {
        #[derive(Deserialize, Debug, PartialEq)]
        enum Shape {
            Circle,
            Square { side: u8 },
            Pair(i64, f64),
            Named(String),
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct Typed {
            double: f32,
            string: String,
            #[serde(rename = "document")]
            nested: BTreeMap<String, Bson>,
            array: Vec<Bson>,
            #[serde(with = "serde_bytes_like")]
            binary: Vec<u8>,
            oid: ObjectId,
            bool: bool,
            date: DateTime,
            null: Option<i32>,
            regex: Regex,
            int32: u16,
            timestamp: Timestamp,
            int64: i64,
            decimal: Decimal128,
            missing: Option<String>,
            shapes: Vec<Shape>,
            tuple: (i32, String),
            newtype: Wrapper,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct Wrapper(i32);
        /// A `Vec<u8>` read with `deserialize_bytes`, as `serde_bytes` does.
        mod serde_bytes_like {
            pub fn deserialize<'de, D: serde::Deserializer<'de>>(
                d: D,
            ) -> Result<Vec<u8>, D::Error> {
                struct Bytes;
                impl serde::de::Visitor<'_> for Bytes {
                    type Value = Vec<u8>;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("bytes")
                    }
                    fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                        Ok(v.to_vec())
                    }
                }
                d.deserialize_bytes(Bytes)
            }
        }
        let mut document = every_presented_type();
        document.insert(
            "shapes",
            bson::bson!(["Circle", { "Square": { "side": 4 } }, { "Pair": [1i64, 2.5] }, { "Named": "n" }]),
        );
        document.insert("tuple", bson::bson!([7, "seven"]));
        document.insert("newtype", 11);
        presented_here_as_bson_does::<Typed>(&bytes_of(&document));
    }

    #[test]
    fn borrowed_strings_borrow_from_the_bytes() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Borrowing<'a> {
            #[serde(borrow)]
            string: &'a str,
            #[serde(borrow)]
            binary: &'a [u8],
        }
        let bytes = bytes_of(&every_presented_type());
        presented_here_as_bson_does::<Borrowing<'_>>(&bytes);
    }

    #[test]
    fn what_it_does_not_present_goes_to_the_bson_crate() {
        let uuid = bson::Uuid::parse_str("00112233-4455-6677-8899-aabbccddeeff").unwrap();
        // A Uuid asks for bson's private newtype; DBPointer (no public constructor) is in
        // the BSON corpus.
        #[derive(Deserialize, Debug, PartialEq)]
        struct WithUuid {
            uuid: bson::Uuid,
        }
        let bytes = bytes_of(&doc! { "uuid": uuid });
        assert_eq!(
            deserialize_here::<WithUuid>(&bytes).err(),
            Some(Declined::ToTheBsonCrate)
        );
        let back: WithUuid = deserialize_from_slice(&bytes).unwrap();
        assert_eq!(back, WithUuid { uuid });
        // A raw array asks for bson's private newtype.
        #[derive(Deserialize, Debug, PartialEq)]
        struct Raw {
            array: bson::RawArrayBuf,
        }
        let bytes = bytes_of(&every_presented_type());
        assert_eq!(
            deserialize_here::<Raw>(&bytes).err(),
            Some(Declined::ToTheBsonCrate)
        );
        let raw: Raw = deserialize_from_slice(&bytes).unwrap();
        assert_eq!(raw, bson::deserialize_from_slice::<Raw>(&bytes).unwrap());
    }

    #[test]
    fn raw_documents_are_presented_here() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Raw<'a> {
            document: RawDocumentBuf,
            #[serde(borrow)]
            borrowed: &'a bson::RawDocument,
            optional: Option<RawDocumentBuf>,
        }
        let mut document = every_presented_type();
        document.insert("borrowed", doc! { "$oid": "x", "a": [1] });
        document.insert("optional", doc! {});
        let bytes = bytes_of(&document);
        let theirs = bson::deserialize_from_slice::<Raw>(&bytes).unwrap();
        assert_eq!(deserialize_here::<Raw>(&bytes), Ok(theirs));
        // Not a document: the bson crate's error.
        let bytes = bytes_of(&doc! { "document": 1, "borrowed": {} });
        assert!(deserialize_from_slice::<Raw>(&bytes).is_err());
    }

    #[test]
    fn errors_are_the_bson_crates() {
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct Wrong {
            string: i32,
        }
        let bytes = bytes_of(&every_presented_type());
        let ours = deserialize_from_slice::<Wrong>(&bytes).unwrap_err();
        let theirs = bson::deserialize_from_slice::<Wrong>(&bytes).unwrap_err();
        assert_eq!(ours.to_string(), theirs.to_string());
        for end in [0, 3, 4, 5, bytes.len() - 1] {
            let theirs = bson::deserialize_from_slice::<Document>(&bytes[..end]).unwrap_err();
            let ours = deserialize_from_slice::<Document>(&bytes[..end]).unwrap_err();
            assert_eq!(ours.to_string(), theirs.to_string(), "cut at {end}");
            let built = document_from_slice(&bytes[..end]).unwrap_err();
            assert_eq!(built.to_string(), theirs.to_string(), "cut at {end}");
        }
    }

    #[test]
    fn malformed_bytes_are_never_accepted_here() {
        let good = bytes_of(&every_presented_type());
        // Every single-byte change that the bson crate refuses is refused here too.
        for at in 0..good.len() {
            for byte in [0x00, 0x01, 0x7F, 0x80, 0xFF] {
                let mut bytes = good.clone();
                bytes[at] = byte;
                match bson::deserialize_from_slice::<Document>(&bytes) {
                    Err(_) => {
                        assert!(
                            deserialize_here::<Document>(&bytes).is_err(),
                            "byte {at} as {byte:#x}"
                        );
                        assert!(built_here(&bytes).is_err(), "byte {at} as {byte:#x}");
                    }
                    // Compared as bytes: a changed byte can make a NaN.
                    Ok(theirs) => assert_eq!(
                        bytes_of(&document_from_slice(&bytes).unwrap()),
                        bytes_of(&theirs),
                        "byte {at} as {byte:#x}"
                    ),
                }
            }
        }
    }

    /// `{"a": {"a": ... {} ...}}` with `levels` embedded documents.
    fn nested_bytes(levels: usize) -> Vec<u8> {
        let total = 5 + 8 * levels;
        let mut out = Vec::with_capacity(total);
        for level in 0..levels {
            out.extend_from_slice(&((total - 8 * level) as i32).to_le_bytes());
            out.extend_from_slice(&[0x03, b'a', 0]);
        }
        out.extend_from_slice(&[5, 0, 0, 0, 0]);
        out.extend(std::iter::repeat_n(0u8, levels));
        out
    }

    #[test]
    fn nesting_is_limited_without_recursing_into_the_bson_crate() {
        // 200 levels of serde visitors take more than a test thread's 2 MiB of stack in an
        // unoptimized build (the bson crate's own deserializer too).
        let run = std::thread::Builder::new().stack_size(64 << 20).spawn(|| {
            let deepest = nested_bytes(MAX_DOCUMENT_DEPTH);
            assert!(deserialize_here::<Document>(&deepest).is_ok());
            assert!(deserialize_from_slice::<Document>(&deepest).is_ok());
            assert!(built_here(&deepest).is_ok());
            for levels in [MAX_DOCUMENT_DEPTH + 1, 100_000] {
                let bytes = nested_bytes(levels);
                assert_eq!(deserialize_here::<Document>(&bytes), Err(Declined::TooDeep));
                assert_eq!(built_here(&bytes), Err(Declined::TooDeep));
                let error = document_from_slice(&bytes).unwrap_err();
                assert!(
                    error.to_string().contains("nests deeper than 200"),
                    "{error}"
                );
                let error = deserialize_from_slice::<Document>(&bytes).unwrap_err();
                assert!(
                    error.to_string().contains("nests deeper than 200"),
                    "{error}"
                );
                // Where this module declines before it reaches the depth, the bson crate is
                // not asked either.
                // A DBPointer ("p": namespace "n", an ObjectId) first.
                let mut declined = bytes.clone();
                let db_pointer = [0x0C, b'p', 0, 2, 0, 0, 0, b'n', 0]
                    .into_iter()
                    .chain([7; 12]);
                declined.splice(4..4, db_pointer);
                let length = declined.len() as i32;
                declined[..4].copy_from_slice(&length.to_le_bytes());
                assert_eq!(
                    deserialize_here::<Document>(&declined),
                    Err(Declined::ToTheBsonCrate)
                );
                assert!(!nests_within_limit(&declined));
                let error = document_from_slice(&declined).unwrap_err();
                assert!(
                    error.to_string().contains("nests deeper than 200"),
                    "{error}"
                );
                let error = deserialize_from_slice::<Document>(&declined).unwrap_err();
                assert!(
                    error.to_string().contains("nests deeper than 200"),
                    "{error}"
                );
            }
        });
        run.unwrap().join().unwrap();
    }
}
