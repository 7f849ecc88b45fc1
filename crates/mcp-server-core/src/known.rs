//! The names a server knows it serves: the methods, tools and prompts a request's metric
//! labels may carry (security review X6). [`crate::Server`] implements it; the request span
//! ([`crate::trace`]) and the metrics (`otel`) take it instead of the server, so that they sit
//! below the server rather than in a circle with it.

/// Whether a server serves a method, a tool or a prompt of this name.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) trait KnownNames {
    /// An extension method it registered (the protocol's own are known by their type).
    fn serves_extension_method(&self, method: &str) -> bool;
    /// A tool it registered.
    fn serves_tool(&self, name: &str) -> bool;
    /// A prompt it registered.
    fn serves_prompt(&self, name: &str) -> bool;
}
