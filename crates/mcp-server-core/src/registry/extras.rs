//! What every definition (tool, prompt, resource, template) has beside its own settings: the
//! application state it takes, and the version of the crate that defines it.

/// The methods `requires_state` and `__crate_version` of a definition type with fields `needs`
/// and `crate_version`; `$what` names the kind in their documentation.
macro_rules! definition_extras {
    ($what:literal) => {
        #[doc = concat!("Declares that this ", $what, " takes the server's application state of type `T` (from")]
        /// `ctx.state::<T>()`): the server's build fails unless it was given a `T` with
        /// `with_state`. An annotated function's `State<T>` parameter declares it by itself.
        pub fn requires_state<T: Send + Sync + 'static>(mut self) -> Self {
            crate::state::StateNeed::of::<T>().add_to(&mut self.needs);
            self
        }

        #[doc = concat!("The version of the crate that defines this ", $what, ", which an annotated function")]
        /// records; the server reports it as its own unless
        /// [`McpServer::version`](crate::registry::McpServer::version) says otherwise.
        #[doc(hidden)]
        pub fn __crate_version(mut self, version: Option<&'static str>) -> Self {
            self.crate_version = version;
            self
        }
    };
}

pub(crate) use definition_extras;
