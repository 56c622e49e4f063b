//! [`Collation`]: how an operation compares strings (the server's `collation` document),
//! typed as the official driver types it.

use bson::{doc, Document};
use serde::{Deserialize, Serialize};

/// The string comparison rules of an operation, an index or a collection (MongoDB
/// manual, "Collation"): the ICU `locale` and, optionally, how strict the comparison is.
/// Options left `None` are not sent, so the server applies the locale's defaults.
///
/// ```
/// use anymongo::options::{Collation, CollationStrength};
/// // Case-insensitive comparisons in English.
/// let collation = Collation::builder()
///     .locale("en")
///     .strength(CollationStrength::Secondary)
///     .build();
/// assert_eq!(collation.locale, "en");
/// ```
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(setter(into)))]
pub struct Collation {
    /// The ICU locale (`"en"`, `"fr_CA"`, `"simple"`…).
    pub locale: String,
    /// The comparison level (`strength`).
    #[builder(default)]
    pub strength: Option<CollationStrength>,
    /// Whether case is a level of its own at strengths 1 and 2 (`caseLevel`).
    #[builder(default)]
    pub case_level: Option<bool>,
    /// Which case sorts first at the tertiary level (`caseFirst`).
    #[builder(default)]
    pub case_first: Option<CollationCaseFirst>,
    /// Whether strings of digits compare as numbers (`numericOrdering`).
    #[builder(default)]
    pub numeric_ordering: Option<bool>,
    /// Whether whitespace and punctuation are base characters (`alternate`).
    #[builder(default)]
    pub alternate: Option<CollationAlternate>,
    /// Which characters are ignorable when `alternate` is `Shifted` (`maxVariable`).
    #[builder(default)]
    pub max_variable: Option<CollationMaxVariable>,
    /// Whether text is normalized before it is compared (`normalization`).
    #[builder(default)]
    pub normalization: Option<bool>,
    /// Whether secondary differences (accents) are compared from the end of the string
    /// (`backwards`).
    #[builder(default)]
    pub backwards: Option<bool>,
}

impl Collation {
    /// The `collation` document as the server takes it: the fields set, and only them.
    pub(crate) fn to_document(&self) -> Document {
        let mut document = doc! { "locale": self.locale.as_str() };
        let flags = [
            ("caseLevel", self.case_level),
            ("numericOrdering", self.numeric_ordering),
            ("normalization", self.normalization),
            ("backwards", self.backwards),
        ];
        for (key, value) in flags {
            if let Some(value) = value {
                document.insert(key, value);
            }
        }
        if let Some(strength) = self.strength {
            document.insert("strength", strength.level());
        }
        let names = [
            ("caseFirst", self.case_first.map(CollationCaseFirst::as_str)),
            ("alternate", self.alternate.map(CollationAlternate::as_str)),
            (
                "maxVariable",
                self.max_variable.map(CollationMaxVariable::as_str),
            ),
        ];
        for (key, value) in names {
            if let Some(value) = value {
                document.insert(key, value);
            }
        }
        document
    }
}

/// Serialized as the server's `collation` document.
impl Serialize for Collation {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_document().serialize(serializer)
    }
}

impl From<Collation> for bson::Bson {
    fn from(collation: Collation) -> bson::Bson {
        bson::Bson::Document(collation.to_document())
    }
}

/// The comparison level of a [`Collation`] (ICU comparison levels); the server's
/// `strength`, 1 to 5.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CollationStrength {
    /// Base characters only (`1`): "a" = "á" = "A".
    Primary,
    /// Base characters and accents (`2`): "a" = "A", "a" < "á". Case-insensitive.
    Secondary,
    /// Base characters, accents and case (`3`, the default).
    Tertiary,
    /// Also punctuation, when `alternate` is `Shifted` (`4`).
    Quaternary,
    /// Every difference, down to the code points (`5`).
    Identical,
}

impl CollationStrength {
    /// The level the server takes, 1 to 5.
    fn level(self) -> i32 {
        match self {
            CollationStrength::Primary => 1,
            CollationStrength::Secondary => 2,
            CollationStrength::Tertiary => 3,
            CollationStrength::Quaternary => 4,
            CollationStrength::Identical => 5,
        }
    }
}

impl From<CollationStrength> for u32 {
    fn from(strength: CollationStrength) -> u32 {
        strength.level().unsigned_abs()
    }
}

impl TryFrom<u32> for CollationStrength {
    type Error = crate::error::Error;

    /// The strength of level `level`; another number is an
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind) error.
    fn try_from(level: u32) -> crate::error::Result<CollationStrength> {
        Ok(match level {
            1 => CollationStrength::Primary,
            2 => CollationStrength::Secondary,
            3 => CollationStrength::Tertiary,
            4 => CollationStrength::Quaternary,
            5 => CollationStrength::Identical,
            _ => {
                return Err(crate::error::Error::invalid_argument(format!(
                    "a collation strength is 1 to 5, not {level}"
                )))
            }
        })
    }
}

impl std::fmt::Display for CollationStrength {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.level())
    }
}

impl Serialize for CollationStrength {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i32(self.level())
    }
}

impl<'de> Deserialize<'de> for CollationStrength {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let level = u32::deserialize(deserializer)?;
        CollationStrength::try_from(level).map_err(serde::de::Error::custom)
    }
}

/// Writes a collation enum whose values the server spells as strings: the enum, its
/// `as_str`, `Display` and `FromStr`.
macro_rules! collation_names {
    ($(#[$doc:meta])* $Name:ident { $($(#[$variant_doc:meta])* $Variant:ident = $name:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $Name {
            $(
                $(#[$variant_doc])*
                #[serde(rename = $name)]
                $Variant,
            )*
        }

        impl $Name {
            /// The value as the server spells it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($Name::$Variant => $name,)*
                }
            }
        }

        impl std::fmt::Display for $Name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $Name {
            type Err = crate::error::Error;

            fn from_str(value: &str) -> crate::error::Result<Self> {
                match value {
                    $($name => Ok($Name::$Variant),)*
                    other => Err(crate::error::Error::invalid_argument(format!(
                        concat!("not a ", stringify!($Name), ": {:?}"),
                        other
                    ))),
                }
            }
        }
    };
}

collation_names!(
    /// Which case sorts first at the tertiary level (a [`Collation`]'s `caseFirst`).
    CollationCaseFirst {
        /// Upper case first.
        Upper = "upper",
        /// Lower case first.
        Lower = "lower",
        /// The locale's order (the default), close to `Lower`.
        Off = "off",
    }
);

collation_names!(
    /// Whether whitespace and punctuation are base characters (a [`Collation`]'s
    /// `alternate`).
    CollationAlternate {
        /// They are base characters (the default).
        NonIgnorable = "non-ignorable",
        /// They are not: they count only at strength 4 and above.
        Shifted = "shifted",
    }
);

collation_names!(
    /// Which characters are ignorable when `alternate` is `Shifted` (a [`Collation`]'s
    /// `maxVariable`).
    CollationMaxVariable {
        /// Whitespace and punctuation.
        Punct = "punct",
        /// Whitespace only.
        Space = "space",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_collation_sends_the_fields_set_and_reads_as_the_spec_tests_spell_it() {
        let collation = Collation::builder()
            .locale("fr")
            .strength(CollationStrength::Secondary)
            .case_first(CollationCaseFirst::Upper)
            .alternate(CollationAlternate::Shifted)
            .max_variable(CollationMaxVariable::Space)
            .backwards(true)
            .build();
        let document = doc! {
            "locale": "fr", "backwards": true, "strength": 2, "caseFirst": "upper",
            "alternate": "shifted", "maxVariable": "space",
        };
        assert_eq!(collation.to_document(), document);
        let read: Collation = bson::deserialize_from_document(document).unwrap();
        assert_eq!(read, collation);
        assert_eq!(
            Collation::builder().locale("en").build().to_document(),
            doc! { "locale": "en" }
        );
        let bad =
            bson::deserialize_from_document::<Collation>(doc! { "locale": "en", "strength": 9 });
        assert!(bad.unwrap_err().to_string().contains("1 to 5"));
        assert_eq!(
            "non-ignorable".parse::<CollationAlternate>().unwrap(),
            CollationAlternate::NonIgnorable
        );
        assert!("loud".parse::<CollationCaseFirst>().is_err());
    }
}
