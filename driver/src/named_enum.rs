//! `named_enum!`: an enum over a closed set of names, as connection strings and
//! commands spell them (read preference modes, compressors, monitoring modes...).

/// Defines a closed set of names: the enum, `name()` and `from_name()` (exact spelling).
macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The name as a connection string spells it.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The value spelled `name` (exact spelling), if any.
            pub fn from_name(name: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|value| value.name() == name)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

pub(crate) use named_enum;
