//! The BSON library the driver speaks: the crate `bson` 3, re-exported whole,
//! with the free functions and error types of bson 2 beside it.
//!
//! The official crate's default features (`compat-3-0-0`) give its users bson 2 as
//! `mongodb::bson`, whose serde functions bson 3 renamed (`to_document` became
//! `serialize_to_document`, `from_document` became `deserialize_from_document`, …) and
//! whose `de::Error` / `ser::Error` became one [`error::Error`]. Those names are here
//! too, calling bson 3's (the errors wrap bson 3's), so that code written that way
//! compiles with `mongodb` replaced by `anymongo`:
//!
//! ```
//! use anymongo::bson::{doc, from_document, to_document, Document};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Debug, PartialEq, Serialize, Deserialize)]
//! struct Book {
//!     title: String,
//!     pages: i32,
//! }
//!
//! let book = Book { title: "Dune".into(), pages: 412 };
//! let document: Document = to_document(&book).unwrap();
//! assert_eq!(document, doc! { "title": "Dune", "pages": 412 });
//! let back: Book = from_document(document).unwrap();
//! assert_eq!(back, book);
//! ```
//!
//! A program that names bson 2 in its own `Cargo.toml` beside the driver has two
//! `Document` types, which do not mix: with anymongo, name its `anymongo::bson`.

pub use ::bson::*;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// bson 2's `bson::de` or `bson::ser`: bson 3's module of that name, and bson 2's
/// `Error` of that direction as a type of its own (so that an application's
/// `From<bson::de::Error>` and `From<bson::ser::Error>` can both exist), wrapping bson
/// 3's one [`error::Error`]; `?` turns it into the driver's [`Error`](crate::error::Error)
/// of that direction.
macro_rules! bson_2_error_module {
    ($module:ident, $direction:literal, $kind:ident) => {
        #[doc = concat!("bson 2's `bson::", stringify!($module), "`: bson 3's, and an `Error` of ", $direction, ".")]
        pub mod $module {
            pub use ::bson::$module::*;

            #[doc = concat!("bson 2's ", $direction, " error: bson 3's error, in its own type.")]
            #[derive(Clone, Debug)]
            pub struct Error(pub ::bson::error::Error);

            #[doc = concat!("bson 2's `", stringify!($module), "::Result`.")]
            pub type Result<T> = std::result::Result<T, Error>;

            impl std::fmt::Display for Error {
                fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    self.0.fmt(f)
                }
            }

            impl std::error::Error for Error {
                fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                    Some(&self.0)
                }
            }

            impl From<::bson::error::Error> for Error {
                fn from(error: ::bson::error::Error) -> Self {
                    Error(error)
                }
            }

            impl From<Error> for crate::error::Error {
                fn from(error: Error) -> Self {
                    crate::error::Error::new(crate::error::ErrorKind::$kind(error.0))
                }
            }
        }
    };
}

bson_2_error_module!(de, "deserialization", BsonDeserialization);
bson_2_error_module!(ser, "serialization", BsonSerialization);

/// bson 2's name of [`deserialize_from_document`].
pub fn from_document<T: DeserializeOwned>(document: Document) -> de::Result<T> {
    Ok(deserialize_from_document(document)?)
}

/// bson 2's name of [`serialize_to_document`].
pub fn to_document<T: Serialize + ?Sized>(value: &T) -> ser::Result<Document> {
    Ok(serialize_to_document(value)?)
}

/// bson 2's name of [`deserialize_from_bson`].
pub fn from_bson<T: DeserializeOwned>(bson: Bson) -> de::Result<T> {
    Ok(deserialize_from_bson(bson)?)
}

/// bson 2's name of [`serialize_to_bson`].
pub fn to_bson<T: Serialize + ?Sized>(value: &T) -> ser::Result<Bson> {
    Ok(serialize_to_bson(value)?)
}

/// bson 2's name of [`deserialize_from_slice`].
pub fn from_slice<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> de::Result<T> {
    Ok(deserialize_from_slice(bytes)?)
}

/// bson 2's name of [`serialize_to_vec`].
pub fn to_vec<T: Serialize>(value: &T) -> ser::Result<Vec<u8>> {
    Ok(serialize_to_vec(value)?)
}

/// bson 2's name of [`serialize_to_raw_document_buf`].
pub fn to_raw_document_buf<T: Serialize>(value: &T) -> ser::Result<RawDocumentBuf> {
    Ok(serialize_to_raw_document_buf(value)?)
}

/// bson 2's name of [`deserialize_from_reader`].
pub fn from_reader<R: std::io::Read, T: DeserializeOwned>(reader: R) -> de::Result<T> {
    Ok(deserialize_from_reader(reader)?)
}
