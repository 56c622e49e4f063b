//! The macros that write the actions' setters.

/// Writes an action's option setters, each setting one field of its options struct
/// (held as `Option<Options>` in the field named first), and `with_options`, which
/// sets them all.
macro_rules! option_setters {
    ($field:ident: $Options:ty; $($(#[$doc:meta])* $name:ident: $type:ty,)*) => {
        /// Sets all the options at once, replacing those set before.
        pub fn with_options(mut self, options: impl Into<Option<$Options>>) -> Self {
            self.$field = options.into();
            self
        }

        $(
            $(#[$doc])*
            pub fn $name(mut self, value: $type) -> Self {
                self.$field.get_or_insert_with(Default::default).$name = Some(value.into());
                self
            }
        )*
    };
}
pub(crate) use option_setters;

/// Writes an action's `timeout` setter: the operation's own timeoutMS (Client Side
/// Operations Timeout spec, "Operation-level timeoutMS"), held in a field `timeout`.
macro_rules! timeout_setter {
    () => {
        /// This operation's timeoutMS: it may take `timeout` in all, retries included,
        /// and fails with [`ErrorKind::OperationTimeout`](crate::ErrorKind::OperationTimeout)
        /// after; `Duration::ZERO` means no limit. Overrides the timeoutMS of the
        /// client, database or collection.
        pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
            self.timeout = Some(timeout);
            self
        }
    };
}
pub(crate) use timeout_setter;
