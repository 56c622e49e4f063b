//! Serde to BSON bytes, for the documents a driver sends: the bytes the bson crate's
//! own serializer writes, in less time.
//!
//! The bson 3 serializer (`bson::serialize_to_buffer`) goes through extended-JSON shapes
//! for its own types: an `ObjectId` is written as its hex text and parsed back, a
//! `DateTime` as its milliseconds in decimal text and parsed back, an array index
//! through `format!`. On the benchmarking spec's documents that made it 0.62x to 0.85x
//! as fast as bson 2's (docs/BENCHMARKS.md). This serializer writes the common shapes
//! directly (scalars, strings, documents, arrays, enums, `ObjectId`, `DateTime` and raw
//! documents) and **declines** everything else: any other of bson's own types (a struct
//! or newtype whose name starts with `$`), a key the bson crate would refuse, an error
//! raised by the value itself. When it declines, the document is serialized again by
//! `bson::serialize_to_buffer`, so the bytes and the errors are always the bson
//! crate's; the tests compare the two byte for byte.
//!
//! ```
//! use anymongo::bson::{doc, oid::ObjectId};
//!
//! let document = doc! { "_id": ObjectId::new(), "tags": ["a", "b"], "n": 1 };
//! let mut bytes = Vec::new();
//! anymongo::bson_serializer::serialize_to_buffer(&document, &mut bytes).unwrap();
//! assert_eq!(bytes, anymongo::bson::serialize_to_vec(&document).unwrap());
//! ```

use std::fmt;

use bson::oid::ObjectId;
use serde::ser::{self, Impossible, Serialize};

/// Appends `value`, which must serialize as a document, to `buffer` as BSON: the same
/// bytes as `bson::serialize_to_buffer`, and the same error when it fails (it does the
/// work when this serializer declines, see the module's documentation).
pub fn serialize_to_buffer<T: Serialize>(
    value: &T,
    buffer: &mut Vec<u8>,
) -> bson::error::Result<()> {
    serialize(value, buffer, None)
}

/// [`serialize_to_buffer`], and where the document's top-level `_id` element is, as
/// seen while writing it. An insert needs the `_id` (CRUD spec: drivers generate a
/// missing one), and finding it afterwards is a walk over the whole top level: for the
/// benchmarking spec's large document (94,355 fields) that walk cost as much as
/// writing the document.
pub(crate) fn serialize_noting_id<T: Serialize>(
    value: &T,
    buffer: &mut Vec<u8>,
) -> bson::error::Result<IdElement> {
    let mut id = IdElement::Unknown;
    serialize(value, buffer, Some(&mut id))?;
    Ok(id)
}

/// Where the top-level `_id` element of a document is, in offsets from the document's
/// first byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IdElement {
    /// The document has none.
    Absent,
    /// The first one's bytes: type, name and value.
    At(std::ops::Range<usize>),
    /// Not known: the document was not written element by element here (raw bytes, or
    /// the bson crate's serializer), or a walk over it found bytes it did not expect.
    Unknown,
}

/// Appends `value` to `buffer`, noting its top-level `_id` in `id` when asked.
fn serialize<T: Serialize>(
    value: &T,
    buffer: &mut Vec<u8>,
    mut id: Option<&mut IdElement>,
) -> bson::error::Result<()> {
    let start = buffer.len();
    let top = Value {
        out: &mut *buffer,
        kind_at: None,
        id: id.as_deref_mut(),
    };
    if value.serialize(top).is_ok() {
        if let Some(IdElement::At(element)) = id {
            *element = element.start - start..element.end - start;
        }
        return Ok(());
    }
    if let Some(id) = id {
        *id = IdElement::Unknown;
    }
    buffer.truncate(start);
    bson::serialize_to_buffer(value, buffer)
}

/// `value` as the bytes of a BSON document ([`serialize_to_buffer`] into a new vector).
///
/// ```
/// #[derive(serde::Serialize)]
/// struct Cat {
///     name: String,
///     age: i32,
/// }
///
/// let cat = Cat { name: "Tom".into(), age: 3 };
/// let bytes = anymongo::bson_serializer::serialize_to_vec(&cat).unwrap();
/// assert_eq!(bytes, anymongo::bson::serialize_to_vec(&cat).unwrap());
/// ```
pub fn serialize_to_vec<T: Serialize>(value: &T) -> bson::error::Result<Vec<u8>> {
    let mut buffer = Vec::new();
    serialize_to_buffer(value, &mut buffer)?;
    Ok(buffer)
}

/// Why this serializer did not write a value.
#[derive(Debug)]
enum Declined {
    /// A shape it leaves to the bson crate: the element is serialized by the bson crate
    /// instead (see the module's documentation).
    Unsupported,
    /// The bson crate refused an element too: the document cannot be serialized, and the
    /// bson crate serializes it again to say why.
    Refused,
}

impl fmt::Display for Declined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("left to the bson crate's serializer")
    }
}

impl std::error::Error for Declined {}

impl ser::Error for Declined {
    fn custom<T: fmt::Display>(_message: T) -> Self {
        Declined::Unsupported
    }
}

use Declined::{Refused, Unsupported};

type Outcome = Result<(), Declined>;

// BSON spec element types.
const DOUBLE: u8 = 0x01;
const STRING: u8 = 0x02;
const DOCUMENT: u8 = 0x03;
const ARRAY: u8 = 0x04;
const BINARY: u8 = 0x05;
const OBJECT_ID: u8 = 0x07;
const UNDEFINED: u8 = 0x06;
const BOOLEAN: u8 = 0x08;
const DATE_TIME: u8 = 0x09;
const NULL: u8 = 0x0A;
const REGULAR_EXPRESSION: u8 = 0x0B;
const CODE: u8 = 0x0D;
const SYMBOL: u8 = 0x0E;
const CODE_WITH_SCOPE: u8 = 0x0F;
const INT32: u8 = 0x10;
const TIMESTAMP: u8 = 0x11;
const INT64: u8 = 0x12;
const MAX_KEY: u8 = 0x7F;
const MIN_KEY: u8 = 0xFF;

/// The bson crate's newtype names for its raw document and array (`bson::raw`): the
/// value is the bytes of a document, copied as they are.
const RAW_DOCUMENT: &str = "$__private__bson_RawDocument";
const RAW_ARRAY: &str = "$__private__bson_RawArray";

/// Appends the key of an element (BSON spec: `element ::= type e_name value`): a
/// placeholder for the type, which the value fills in, and the name as a C string.
/// Returns where the type goes. A name with a NUL byte cannot be a C string.
#[inline(always)]
fn element(out: &mut Vec<u8>, name: &str) -> Result<usize, Declined> {
    let name = name.as_bytes();
    if has_nul(name) {
        return Err(Unsupported);
    }
    let kind_at = out.len();
    out.reserve(name.len() + 2);
    out.push(0);
    out.extend_from_slice(name);
    out.push(0);
    Ok(kind_at)
}

/// Whether `bytes` holds a NUL byte, eight bytes at a time (names are short, and a
/// byte-by-byte loop was the largest cost of writing a nested document, per perf).
#[inline(always)]
fn has_nul(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
        // A byte of `word` is zero iff its high bit is set here (the classic test).
        if word.wrapping_sub(ONES) & !word & HIGHS != 0 {
            return true;
        }
    }
    words.remainder().contains(&0)
}

/// An array element's name: its index in decimal.
fn index_element(out: &mut Vec<u8>, index: usize) -> usize {
    let kind_at = out.len();
    out.push(0);
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = index;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
    out.push(0);
    kind_at
}

/// Opens a document or array: a placeholder for its length. Returns where it starts.
fn open(out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    start
}

/// Closes the document or array opened at `start`: its terminating NUL and its length.
fn close(out: &mut [u8], start: usize) -> Outcome {
    let length = i32::try_from(out.len() - start).map_err(|_| Unsupported)?;
    out[start..start + 4].copy_from_slice(&length.to_le_bytes());
    Ok(())
}

fn push_string(out: &mut Vec<u8>, text: &str) -> Outcome {
    let length = i32::try_from(text.len() + 1).map_err(|_| Unsupported)?;
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    out.push(0);
    Ok(())
}

/// Replaces what was written of the element whose type is at `kind_at` (its name
/// follows) with the bson crate's bytes of it: the element of a document with that one
/// element (BSON spec: an element's bytes are the same in any document).
fn bson_element<T: Serialize + ?Sized>(out: &mut Vec<u8>, kind_at: usize, value: &T) -> Outcome {
    struct Alone<'a, T: ?Sized>(&'a str, &'a T);
    impl<T: Serialize + ?Sized> Serialize for Alone<'_, T> {
        fn serialize<S: ser::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(Some(1))?;
            ser::SerializeMap::serialize_entry(&mut map, self.0, self.1)?;
            ser::SerializeMap::end(map)
        }
    }
    let name_at = kind_at + 1;
    let name_length = out[name_at..]
        .iter()
        .position(|&byte| byte == 0)
        .ok_or(Refused)?;
    // The name is moved out of the buffer before the element is written again in its
    // place: on the stack when it is short, as names are.
    let mut short = [0; 64];
    let long;
    let name = match short.get_mut(..name_length) {
        Some(room) => {
            room.copy_from_slice(&out[name_at..name_at + name_length]);
            &*room
        }
        None => {
            long = out[name_at..name_at + name_length].to_vec();
            &long[..]
        }
    };
    let name = std::str::from_utf8(name).map_err(|_| Refused)?;
    out.truncate(kind_at);
    bson::serialize_to_buffer(&Alone(name, value), out).map_err(|_| Refused)?;
    // The document's length before the element, its terminating NUL after.
    out.pop();
    out.drain(kind_at..kind_at + 4);
    Ok(())
}

/// Serializes one value: the top-level document (`kind_at` `None`: only a document may
/// be there) or an element's value, whose type goes at `kind_at`.
struct Value<'a> {
    out: &'a mut Vec<u8>,
    kind_at: Option<usize>,
    /// For the top-level document, when its `_id` is asked for
    /// ([`serialize_noting_id`]).
    id: Option<&'a mut IdElement>,
}

impl<'a> Value<'a> {
    /// Sets the element's type, as the value turns out to be.
    fn kind(&mut self, kind: u8) -> Outcome {
        match self.kind_at {
            Some(at) => {
                self.out[at] = kind;
                Ok(())
            }
            None if kind == DOCUMENT => Ok(()),
            None => Err(Unsupported),
        }
    }

    fn scalar(mut self, kind: u8, bytes: &[u8]) -> Outcome {
        self.kind(kind)?;
        self.out.extend_from_slice(bytes);
        Ok(())
    }

    fn document(mut self, kind: u8) -> Result<Compound<'a>, Declined> {
        self.kind(kind)?;
        let start = open(self.out);
        // Only a document can be at the top level (`kind`), and its elements are
        // noted as they are written.
        if let Some(id) = self.id.as_deref_mut() {
            *id = IdElement::Absent;
        }
        Ok(Compound {
            out: self.out,
            start,
            outer: None,
            count: 0,
            pending: None,
            id: self.id,
        })
    }

    /// `{ variant: <inner> }`, the externally tagged enum shape, with the inner
    /// document or array opened.
    fn variant(mut self, variant: &str, inner: u8) -> Result<Compound<'a>, Declined> {
        // The variant's name is written below without being noted: its `_id` is left
        // unknown.
        self.id = None;
        let Compound { out, start, .. } = self.document(DOCUMENT)?;
        let kind_at = element(out, variant)?;
        out[kind_at] = inner;
        let inner_start = open(out);
        Ok(Compound {
            out,
            start: inner_start,
            outer: Some(start),
            count: 0,
            pending: None,
            id: None,
        })
    }
}

impl<'a> ser::Serializer for Value<'a> {
    type Ok = ();
    type Error = Declined;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Struct<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn serialize_bool(self, v: bool) -> Outcome {
        self.scalar(BOOLEAN, &[u8::from(v)])
    }

    fn serialize_i8(self, v: i8) -> Outcome {
        self.serialize_i32(v.into())
    }

    fn serialize_i16(self, v: i16) -> Outcome {
        self.serialize_i32(v.into())
    }

    fn serialize_i32(self, v: i32) -> Outcome {
        self.scalar(INT32, &v.to_le_bytes())
    }

    fn serialize_i64(self, v: i64) -> Outcome {
        self.scalar(INT64, &v.to_le_bytes())
    }

    fn serialize_u8(self, v: u8) -> Outcome {
        self.serialize_i32(v.into())
    }

    fn serialize_u16(self, v: u16) -> Outcome {
        self.serialize_i32(v.into())
    }

    fn serialize_u32(self, v: u32) -> Outcome {
        self.serialize_i64(v.into())
    }

    fn serialize_u64(self, v: u64) -> Outcome {
        self.serialize_i64(i64::try_from(v).map_err(|_| Unsupported)?)
    }

    fn serialize_f32(self, v: f32) -> Outcome {
        self.serialize_f64(v.into())
    }

    fn serialize_f64(self, v: f64) -> Outcome {
        self.scalar(DOUBLE, &v.to_le_bytes())
    }

    fn serialize_char(self, v: char) -> Outcome {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(mut self, v: &str) -> Outcome {
        self.kind(STRING)?;
        push_string(self.out, v)
    }

    fn serialize_bytes(mut self, v: &[u8]) -> Outcome {
        self.kind(BINARY)?;
        let length = i32::try_from(v.len()).map_err(|_| Unsupported)?;
        self.out.extend_from_slice(&length.to_le_bytes());
        // Subtype 0: generic binary.
        self.out.push(0);
        self.out.extend_from_slice(v);
        Ok(())
    }

    fn serialize_none(self) -> Outcome {
        self.scalar(NULL, &[])
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Outcome {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Outcome {
        self.serialize_none()
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Outcome {
        self.serialize_none()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Outcome {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Outcome {
        match name {
            RAW_DOCUMENT => value.serialize(Raw {
                value: self,
                kind: DOCUMENT,
            }),
            RAW_ARRAY => value.serialize(Raw {
                value: self,
                kind: ARRAY,
            }),
            // The bson crate's own (a UUID, human-readable mode, a raw value).
            _ if name.starts_with('$') => Err(Unsupported),
            _ => value.serialize(self),
        }
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Outcome {
        let mut document = self.document(DOCUMENT)?;
        ser::SerializeMap::serialize_entry(&mut document, variant, value)?;
        ser::SerializeMap::end(document)
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a>, Declined> {
        self.document(ARRAY)
    }

    fn serialize_tuple(self, _len: usize) -> Result<Compound<'a>, Declined> {
        self.document(ARRAY)
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Declined> {
        self.document(ARRAY)
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Declined> {
        self.variant(variant, ARRAY)
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a>, Declined> {
        self.document(DOCUMENT)
    }

    fn serialize_struct(self, name: &'static str, _len: usize) -> Result<Struct<'a>, Declined> {
        match name {
            _ if SPECIAL.contains(&name) => Ok(Struct::Special(Some(self), name)),
            "$codeWithScope" => {
                let Compound { out, start, .. } = self.document(CODE_WITH_SCOPE)?;
                Ok(Struct::CodeWithScope(CodeWithScope {
                    out,
                    start,
                    fields: 0,
                }))
            }
            _ if name.starts_with('$') => Err(Unsupported),
            _ => self.document(DOCUMENT).map(Struct::Document),
        }
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Declined> {
        self.variant(variant, DOCUMENT)
    }
}

/// An open document or array (and, for an enum variant, the document around it).
struct Compound<'a> {
    out: &'a mut Vec<u8>,
    start: usize,
    outer: Option<usize>,
    /// Elements written: an array's next index.
    count: usize,
    /// Where the type of the value of the key just written goes (a map's entry), and
    /// whether that key is a noted `_id`.
    pending: Option<(usize, bool)>,
    /// The top-level document's `_id`, when asked for (see [`Value`]).
    id: Option<&'a mut IdElement>,
}

impl Compound<'_> {
    fn field<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) -> Outcome {
        let kind_at = element(self.out, name)?;
        self.count += 1;
        self.value(kind_at, value)?;
        self.note(kind_at, self.id.is_some() && name == "_id");
        Ok(())
    }

    /// Notes the element just written at `kind_at` as the document's `_id`, when it is
    /// its first.
    fn note(&mut self, kind_at: usize, is_id: bool) {
        if let Some(id) = self.id.as_deref_mut() {
            if is_id && *id == IdElement::Absent {
                *id = IdElement::At(kind_at..self.out.len());
            }
        }
    }

    /// Writes the key of a map's entry: returns where its type goes, and whether it is
    /// an `_id` to note.
    fn key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(usize, bool), Declined> {
        let out = &mut *self.out;
        let noted = self.id.is_some();
        let written = key.serialize(Text(|name: &str| {
            Ok((element(out, name)?, noted && name == "_id"))
        }))?;
        self.count += 1;
        Ok(written)
    }

    /// Writes the value of the map entry whose key [`Compound::key`] wrote.
    fn entry_value<T: Serialize + ?Sized>(&mut self, key: (usize, bool), value: &T) -> Outcome {
        let (kind_at, is_id) = key;
        self.value(kind_at, value)?;
        self.note(kind_at, is_id);
        Ok(())
    }

    fn item<T: Serialize + ?Sized>(&mut self, value: &T) -> Outcome {
        let kind_at = index_element(self.out, self.count);
        self.count += 1;
        self.value(kind_at, value)
    }

    /// Writes the value of the element whose type goes at `kind_at`, or has the bson
    /// crate write the element when this serializer declines it.
    fn value<T: Serialize + ?Sized>(&mut self, kind_at: usize, value: &T) -> Outcome {
        let written = value.serialize(Value {
            out: &mut *self.out,
            kind_at: Some(kind_at),
            id: None,
        });
        match written {
            Err(Unsupported) => bson_element(self.out, kind_at, value),
            written => written,
        }
    }

    fn end(self) -> Outcome {
        self.out.push(0);
        close(self.out, self.start)?;
        if let Some(outer) = self.outer {
            self.out.push(0);
            close(self.out, outer)?;
        }
        Ok(())
    }
}

/// The four serde shapes written as an array: each element is the next item.
macro_rules! array_shaped {
    ($($shape:ident :: $element:ident),* $(,)?) => {$(
        impl ser::$shape for Compound<'_> {
            type Ok = ();
            type Error = Declined;

            fn $element<T: Serialize + ?Sized>(&mut self, value: &T) -> Outcome {
                self.item(value)
            }

            fn end(self) -> Outcome {
                Compound::end(self)
            }
        }
    )*};
}

array_shaped!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Declined;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Outcome {
        self.pending = Some(self.key(key)?);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Outcome {
        let key = self.pending.take().ok_or(Unsupported)?;
        self.entry_value(key, value)
    }

    // What a `Document` and a `HashMap` call: the key and its value at once, without
    // parking the key in `pending` (fewer instructions per element, per cachegrind).
    fn serialize_entry<K: Serialize + ?Sized, V: Serialize + ?Sized>(
        &mut self,
        key: &K,
        value: &V,
    ) -> Outcome {
        let key = self.key(key)?;
        self.entry_value(key, value)
    }

    fn end(self) -> Outcome {
        Compound::end(self)
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = Declined;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Outcome {
        self.field(key, value)
    }

    fn end(self) -> Outcome {
        Compound::end(self)
    }
}

/// A struct: a document, or one of the bson crate's types written here directly (the
/// value, until its field has been written, and the struct's name), or code with scope
/// (written as its two fields come).
enum Struct<'a> {
    Document(Compound<'a>),
    Special(Option<Value<'a>>, &'static str),
    CodeWithScope(CodeWithScope<'a>),
}

/// The bson crate's types this serializer writes itself (`bson::ser::serde`: each is a
/// struct of one field named as the struct, whose value is the type's extended JSON).
/// The others (Decimal128, a binary of another subtype than generic, a DBPointer) are
/// left to the bson crate, element by element.
const SPECIAL: [&str; 9] = [
    "$oid",
    "$date",
    "$code",
    "$symbol",
    "$timestamp",
    "$regularExpression",
    "$minKey",
    "$maxKey",
    "$undefined",
];

impl ser::SerializeStruct for Struct<'_> {
    type Ok = ();
    type Error = Declined;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Outcome {
        let (slot, name) = match self {
            Struct::Document(document) => return document.field(key, value),
            Struct::CodeWithScope(code) => return code.field(key, value),
            Struct::Special(slot, name) => (slot, *name),
        };
        if key != name {
            return Err(Unsupported);
        }
        let mut value_of = slot.take().ok_or(Unsupported)?;
        match name {
            // `{ "$oid": <24 hex digits> }`.
            "$oid" => {
                let id = value.serialize(Text(|hex: &str| {
                    ObjectId::parse_str(hex).map_err(|_| Unsupported)
                }))?;
                value_of.scalar(OBJECT_ID, &id.bytes())
            }
            // `{ "$date": { "$numberLong": <decimal milliseconds> } }`.
            "$date" => {
                let millis = value.serialize(Body::<1>::new(["$numberLong"]))?;
                let millis: i64 = millis[0].text()?.parse().map_err(|_| Unsupported)?;
                value_of.scalar(DATE_TIME, &millis.to_le_bytes())
            }
            // `{ "$code": <text> }`, `{ "$symbol": <text> }`: strings of another type.
            "$code" | "$symbol" => {
                value_of.kind(if name == "$code" { CODE } else { SYMBOL })?;
                value.serialize(Text(|text: &str| push_string(value_of.out, text)))
            }
            // `{ "$timestamp": { "t": <time>, "i": <increment> } }` (BSON spec: the
            // increment's four bytes, then the time's).
            "$timestamp" => {
                let [time, increment] = value.serialize(Body::new(["t", "i"]))?;
                let time = u32::try_from(time.integer()?).map_err(|_| Unsupported)?;
                let increment = u32::try_from(increment.integer()?).map_err(|_| Unsupported)?;
                let mut bytes = [0; 8];
                bytes[..4].copy_from_slice(&increment.to_le_bytes());
                bytes[4..].copy_from_slice(&time.to_le_bytes());
                value_of.scalar(TIMESTAMP, &bytes)
            }
            // `{ "$regularExpression": { "pattern": .., "options": .. } }`: two C
            // strings. The bson crate sorts the options; unsorted ones are left to it.
            "$regularExpression" => {
                let [pattern, options] = value.serialize(Body::new(["pattern", "options"]))?;
                let (pattern, options) = (pattern.text()?, options.text()?);
                if !options.as_bytes().is_sorted() {
                    return Err(Unsupported);
                }
                value_of.kind(REGULAR_EXPRESSION)?;
                for text in [pattern, options] {
                    if text.as_bytes().contains(&0) {
                        return Err(Unsupported);
                    }
                    value_of.out.extend_from_slice(text.as_bytes());
                    value_of.out.push(0);
                }
                Ok(())
            }
            // `{ "$minKey": 1 }` and the like: the type alone (the bson crate reads no
            // further either).
            "$minKey" => value_of.scalar(MIN_KEY, &[]),
            "$maxKey" => value_of.scalar(MAX_KEY, &[]),
            _ => value_of.scalar(UNDEFINED, &[]),
        }
    }

    fn end(self) -> Outcome {
        match self {
            Struct::Document(document) => document.end(),
            Struct::CodeWithScope(code) => code.end(),
            // Its field was never written.
            Struct::Special(Some(_), _) => Err(Unsupported),
            Struct::Special(None, _) => Ok(()),
        }
    }
}

/// Code with scope, `{ "$code": <text>, "$scope": <document> }` (BSON spec:
/// `code_w_s ::= int32 string document`, the int32 counting all of it).
struct CodeWithScope<'a> {
    out: &'a mut Vec<u8>,
    start: usize,
    /// What has been written: nothing, the code, the scope too.
    fields: u8,
}

impl CodeWithScope<'_> {
    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Outcome {
        match (self.fields, key) {
            (0, "$code") => value.serialize(Text(|code: &str| push_string(self.out, code)))?,
            // A document, as at the top level.
            (1, "$scope") => value.serialize(Value {
                out: &mut *self.out,
                kind_at: None,
                id: None,
            })?,
            _ => return Err(Unsupported),
        }
        self.fields += 1;
        Ok(())
    }

    fn end(self) -> Outcome {
        if self.fields != 2 {
            return Err(Unsupported);
        }
        close(self.out, self.start)
    }
}

/// A field's value in the body of one of the bson crate's types.
enum Field {
    Missing,
    Integer(i64),
    Text(String),
}

impl Field {
    fn integer(&self) -> Result<i64, Declined> {
        match self {
            Field::Integer(value) => Ok(*value),
            _ => Err(Unsupported),
        }
    }

    fn text(&self) -> Result<&str, Declined> {
        match self {
            Field::Text(value) => Ok(value),
            _ => Err(Unsupported),
        }
    }
}

/// The serializer methods of the narrow serializers below that decline: every one but
/// `serialize_str`, `serialize_bytes` and `serialize_struct` (and `serialize_i64` with
/// `except_i64`).
macro_rules! decline_the_rest {
    (@scalars $($method:ident($type:ty)),*) => {$(
        fn $method(self, _: $type) -> Result<Self::Ok, Declined> {
            Err(Unsupported)
        }
    )*};
    () => {
        fn serialize_i64(self, _: i64) -> Result<Self::Ok, Declined> {
            Err(Unsupported)
        }
        decline_the_rest!(except_i64);
    };
    (except_i64) => {
        decline_the_rest!(@scalars serialize_bool(bool), serialize_i8(i8), serialize_i16(i16), serialize_i32(i32), serialize_u8(u8), serialize_u16(u16), serialize_u32(u32), serialize_u64(u64), serialize_f32(f32), serialize_f64(f64), serialize_char(char));
        fn serialize_none(self) -> Result<Self::Ok, Declined> {
            Err(Unsupported)
        }
        fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<Self::Ok, Declined> {
            Err(Unsupported)
        }
        fn serialize_unit(self) -> Result<Self::Ok, Declined> {
            Err(Unsupported)
        }
        fn serialize_unit_struct(self, _: &'static str) -> Result<Self::Ok, Declined> {
            Err(Unsupported)
        }
        fn serialize_unit_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
        ) -> Result<Self::Ok, Declined> {
            Err(Unsupported)
        }
        fn serialize_newtype_struct<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            _: &T,
        ) -> Result<Self::Ok, Declined> {
            Err(Unsupported)
        }
        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result<Self::Ok, Declined> {
            Err(Unsupported)
        }
        fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Declined> {
            Err(Unsupported)
        }
        fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Declined> {
            Err(Unsupported)
        }
        fn serialize_tuple_struct(
            self,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleStruct, Declined> {
            Err(Unsupported)
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleVariant, Declined> {
            Err(Unsupported)
        }
        fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Declined> {
            Err(Unsupported)
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStructVariant, Declined> {
            Err(Unsupported)
        }
    };
}

/// Accepts a string only, and makes something of it: a key, an `ObjectId`'s hex digits.
struct Text<F>(F);

impl<R, F: FnOnce(&str) -> Result<R, Declined>> ser::Serializer for Text<F> {
    type Ok = R;
    type Error = Declined;
    type SerializeSeq = Impossible<R, Declined>;
    type SerializeTuple = Impossible<R, Declined>;
    type SerializeTupleStruct = Impossible<R, Declined>;
    type SerializeTupleVariant = Impossible<R, Declined>;
    type SerializeMap = Impossible<R, Declined>;
    type SerializeStruct = Impossible<R, Declined>;
    type SerializeStructVariant = Impossible<R, Declined>;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn serialize_str(self, v: &str) -> Result<R, Declined> {
        (self.0)(v)
    }

    fn serialize_bytes(self, _: &[u8]) -> Result<R, Declined> {
        Err(Unsupported)
    }

    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Declined> {
        Err(Unsupported)
    }

    decline_the_rest!();
}

/// The body of one of the bson crate's types: a struct of `N` fields with these names,
/// in this order, each an integer or a string.
struct Body<const N: usize> {
    names: [&'static str; N],
    fields: [Field; N],
    written: usize,
}

impl<const N: usize> Body<N> {
    fn new(names: [&'static str; N]) -> Self {
        Body {
            names,
            fields: std::array::from_fn(|_| Field::Missing),
            written: 0,
        }
    }
}

impl<const N: usize> ser::Serializer for Body<N> {
    type Ok = [Field; N];
    type Error = Declined;
    type SerializeSeq = Impossible<[Field; N], Declined>;
    type SerializeTuple = Impossible<[Field; N], Declined>;
    type SerializeTupleStruct = Impossible<[Field; N], Declined>;
    type SerializeTupleVariant = Impossible<[Field; N], Declined>;
    type SerializeMap = Impossible<[Field; N], Declined>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<[Field; N], Declined>;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn serialize_str(self, _: &str) -> Result<[Field; N], Declined> {
        Err(Unsupported)
    }

    fn serialize_bytes(self, _: &[u8]) -> Result<[Field; N], Declined> {
        Err(Unsupported)
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Declined> {
        Ok(self)
    }

    decline_the_rest!();
}

impl<const N: usize> ser::SerializeStruct for Body<N> {
    type Ok = [Field; N];
    type Error = Declined;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Outcome {
        if self.names.get(self.written) != Some(&key) {
            return Err(Unsupported);
        }
        self.fields[self.written] = value.serialize(Scalar)?;
        self.written += 1;
        Ok(())
    }

    fn end(self) -> Result<[Field; N], Declined> {
        match self.written == N {
            true => Ok(self.fields),
            false => Err(Unsupported),
        }
    }
}

/// An integer or a string, in the body of one of the bson crate's types.
struct Scalar;

impl ser::Serializer for Scalar {
    type Ok = Field;
    type Error = Declined;
    type SerializeSeq = Impossible<Field, Declined>;
    type SerializeTuple = Impossible<Field, Declined>;
    type SerializeTupleStruct = Impossible<Field, Declined>;
    type SerializeTupleVariant = Impossible<Field, Declined>;
    type SerializeMap = Impossible<Field, Declined>;
    type SerializeStruct = Impossible<Field, Declined>;
    type SerializeStructVariant = Impossible<Field, Declined>;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn serialize_str(self, v: &str) -> Result<Field, Declined> {
        Ok(Field::Text(v.to_owned()))
    }

    fn serialize_i64(self, v: i64) -> Result<Field, Declined> {
        Ok(Field::Integer(v))
    }

    fn serialize_bytes(self, _: &[u8]) -> Result<Field, Declined> {
        Err(Unsupported)
    }

    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Declined> {
        Err(Unsupported)
    }

    decline_the_rest!(except_i64);
}

/// A raw document or array (`bson::RawDocumentBuf`, `RawArrayBuf`): its bytes, copied
/// as they are (the bson crate checks them no further either).
struct Raw<'a> {
    value: Value<'a>,
    kind: u8,
}

impl ser::Serializer for Raw<'_> {
    type Ok = ();
    type Error = Declined;
    type SerializeSeq = Impossible<(), Declined>;
    type SerializeTuple = Impossible<(), Declined>;
    type SerializeTupleStruct = Impossible<(), Declined>;
    type SerializeTupleVariant = Impossible<(), Declined>;
    type SerializeMap = Impossible<(), Declined>;
    type SerializeStruct = Impossible<(), Declined>;
    type SerializeStructVariant = Impossible<(), Declined>;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn serialize_str(self, _: &str) -> Outcome {
        Err(Unsupported)
    }

    fn serialize_bytes(self, v: &[u8]) -> Outcome {
        self.value.scalar(self.kind, v)
    }

    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Declined> {
        Err(Unsupported)
    }

    decline_the_rest!();
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use bson::{
        doc, oid::ObjectId, rawdoc, spec::BinarySubtype, Binary, Bson, DateTime, Decimal128,
        Document, JavaScriptCodeWithScope, RawDocumentBuf, Regex, Timestamp,
    };
    use serde::Serialize;

    use super::*;

    /// Serializes `value` both ways: the bytes are the same, or both fail.
    #[track_caller]
    fn same<T: Serialize>(value: &T) {
        let ours = serialize_to_vec(value);
        let theirs = bson::serialize_to_vec(value);
        match (ours, theirs) {
            (Ok(ours), Ok(theirs)) => assert_eq!(ours, theirs),
            (Err(ours), Err(theirs)) => assert_eq!(ours.to_string(), theirs.to_string()),
            (ours, theirs) => panic!("ours {ours:?}, the bson crate's {theirs:?}"),
        }
    }

    /// A DBPointer (deprecated; the bson crate builds one only from bytes).
    fn db_pointer(id: ObjectId) -> Bson {
        let mut element = vec![0x0C, b'p', 0, 8, 0, 0, 0];
        element.extend_from_slice(b"db.coll\0");
        element.extend_from_slice(&id.bytes());
        let mut bytes = ((element.len() + 5) as i32).to_le_bytes().to_vec();
        bytes.extend_from_slice(&element);
        bytes.push(0);
        let document = Document::from_reader(&bytes[..]).unwrap();
        document.get("p").unwrap().clone()
    }

    /// Whether this serializer wrote `value` itself (without declining).
    fn written_here<T: Serialize + ?Sized>(value: &T) -> bool {
        let mut out = Vec::new();
        value
            .serialize(Value {
                out: &mut out,
                kind_at: None,
                id: None,
            })
            .is_ok()
    }

    #[test]
    fn every_bson_type_in_a_document_is_the_bson_crates_bytes() {
        let id = ObjectId::parse_str("5f0c9a6b1c9d440000a1b2c3").unwrap();
        let document = doc! {
            "double": 1.5, "string": "text with \u{e9} and a \0 inside", "empty": "",
            "document": { "a": 1, "b": { "c": [] } }, "array": [1, "two", [3.0], { "four": 4 }],
            "binary": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2, 3] },
            "uuid": Binary { subtype: BinarySubtype::Uuid, bytes: vec![7; 16] },
            "undefined": Bson::Undefined, "id": id, "true": true, "false": false,
            "date": DateTime::from_millis(-1_234_567), "later": DateTime::MAX, "null": Bson::Null,
            "regex": Regex { pattern: "^a".to_string().try_into().unwrap(), options: "i".to_string().try_into().unwrap() },
            "code": Bson::JavaScriptCode("f()".into()), "symbol": Bson::Symbol("s".into()),
            "int32": i32::MIN, "timestamp": Timestamp { time: 1, increment: 2 },
            "int64": i64::MAX, "decimal": Decimal128::from_bytes([9; 16]),
            "min": Bson::MinKey, "max": Bson::MaxKey,
            "code with scope": Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                code: "g(x)".into(), scope: doc! { "x": 1, "id": id, "in": [{ "deep": true }] },
            }),
            "empty scope": Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                code: String::new(), scope: Document::new(),
            }),
            "unsorted options": Regex {
                pattern: "b".to_string().try_into().unwrap(),
                options: "xmi".to_string().try_into().unwrap(),
            },
            "dbpointer": db_pointer(id),
        };
        same(&document);
        // Each type alone, so that one declining does not hide another's bytes.
        for (key, value) in &document {
            same(&doc! { key: value.clone() });
        }
        // Written here, but for the elements left to the bson crate one by one.
        assert!(written_here(&document));
        let special =
            doc! { "d": Decimal128::from_bytes([9; 16]), "t": Timestamp { time: 1, increment: 2 } };
        assert!(written_here(
            &doc! { "in": [special.clone(), { "n": special }] }
        ));
    }

    #[test]
    fn a_map_written_key_then_value_is_the_same_as_entry_by_entry() {
        // serde's maps and `Document` call `serialize_entry`; a hand-written
        // `Serialize` may call `serialize_key` and `serialize_value` instead.
        struct Split;
        impl Serialize for Split {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(None)?;
                map.serialize_key("_id")?;
                map.serialize_value(&7)?;
                map.serialize_key("a")?;
                map.serialize_value(&doc! { "b": [1, "two"] })?;
                map.end()
            }
        }
        same(&Split);
        assert!(written_here(&Split));
        let mut bytes = Vec::new();
        let id = serialize_noting_id(&Split, &mut bytes).unwrap();
        // `{` length, then `_id`: type, "_id\0", an int32.
        assert_eq!(id, IdElement::At(4..4 + 1 + 4 + 4));
        assert_eq!(
            bytes,
            serialize_to_vec(&doc! { "_id": 7, "a": { "b": [1, "two"] } }).unwrap()
        );
    }

    #[test]
    fn serde_shapes_are_the_bson_crates_bytes() {
        #[derive(Serialize)]
        struct Newtype(i32);
        #[derive(Serialize)]
        struct Unit;
        #[derive(Serialize)]
        struct Pair(i8, String);
        #[derive(Serialize)]
        enum Shape {
            Plain,
            Wrapped(u16),
            Tuple(u32, f32),
            Fields { x: u64, y: Option<char> },
        }
        #[derive(Serialize)]
        struct Everything {
            small: i8,
            short: i16,
            byte: u8,
            unsigned: u32,
            big: u64,
            single: f32,
            letter: char,
            #[serde(with = "serde_bytes_shim")]
            bytes: Vec<u8>,
            missing: Option<i32>,
            present: Option<&'static str>,
            unit: (),
            unit_struct: Unit,
            newtype: Newtype,
            pair: Pair,
            tuple: (bool, i64),
            shapes: Vec<Shape>,
            map: BTreeMap<String, Vec<i32>>,
            id: ObjectId,
            when: DateTime,
            raw: RawDocumentBuf,
            nested: Document,
        }
        mod serde_bytes_shim {
            pub fn serialize<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(v)
            }
        }
        let everything = Everything {
            small: -8,
            short: -16,
            byte: 8,
            unsigned: u32::MAX,
            big: i64::MAX as u64,
            single: 0.25,
            letter: 'é',
            bytes: vec![0, 1, 255],
            missing: None,
            present: Some("here"),
            unit: (),
            unit_struct: Unit,
            newtype: Newtype(7),
            pair: Pair(-1, "one".into()),
            tuple: (true, -2),
            shapes: vec![
                Shape::Plain,
                Shape::Wrapped(3),
                Shape::Tuple(4, 5.5),
                Shape::Fields { x: 6, y: Some('z') },
                Shape::Fields { x: 7, y: None },
            ],
            map: BTreeMap::from([("k".to_string(), vec![1, 2]), ("l".into(), vec![])]),
            id: ObjectId::new(),
            when: DateTime::now(),
            raw: rawdoc! { "r": 1, "s": [true] },
            nested: doc! { "deep": { "deeper": (0..12).collect::<Vec<i32>>() } },
        };
        same(&everything);
        assert!(written_here(&everything));
        // A variant at the top level is a document too.
        same(&Shape::Fields { x: 1, y: None });
        same(&Shape::Wrapped(1));
        same(&Shape::Tuple(1, 2.0));
        same(&rawdoc! { "top": "raw" });
        assert!(written_here(&rawdoc! { "top": "raw" }));
    }

    #[test]
    fn what_the_bson_crate_refuses_is_refused_with_its_error() {
        // Not a document at the top level.
        same(&1);
        same(&"text");
        same(&vec![1, 2]);
        same(&ObjectId::new());
        same(&Shape2::Plain);
        // A key with a NUL byte, at the top and nested.
        same(&doc! { "a\0b": 1 });
        same(&BTreeMap::from([("a\0".to_string(), 1)]));
        same(&doc! { "ok": { "no\0": 1 } });
        // A number out of BSON's range, and a key that is not a string.
        same(&BTreeMap::from([("big", u64::MAX)]));
        same(&BTreeMap::from([(1, 2)]));
        // An error raised by the value itself.
        struct Failing;
        impl Serialize for Failing {
            fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("this value refuses"))
            }
        }
        same(&BTreeMap::from([("f", Failing)]));
        #[derive(Serialize)]
        enum Shape2 {
            Plain,
        }
    }

    #[test]
    fn a_nul_is_found_anywhere_in_a_name() {
        for length in 0..40 {
            let clean = "k".repeat(length);
            assert!(!has_nul(clean.as_bytes()), "{length}");
            for at in 0..length {
                let mut name = clean.clone().into_bytes();
                name[at] = 0;
                assert!(has_nul(&name), "{length} {at}");
            }
        }
        // Bytes above 0x80 are not taken for a NUL.
        assert!(!has_nul("éééééééééé".as_bytes()));
        assert!(!has_nul(&[
            0x80, 0x81, 0xFF, 0x01, 0x80, 0x80, 0x80, 0x80, 0x01
        ]));
    }

    #[test]
    fn array_indexes_are_decimal() {
        let long: Vec<i32> = (0..1_234).collect();
        same(&doc! { "long": long });
    }
}
