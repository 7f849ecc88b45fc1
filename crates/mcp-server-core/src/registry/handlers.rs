//! A value whose `impl` block is annotated with `#[mcp::tools]`: its methods registered as
//! tools, prompts and resources, all sharing the one value.

use super::McpServer;

/// A type whose methods are tools, prompts or resources: an `impl` block annotated with
/// `#[mcp::tools]`. Register a value with [`McpServer::register`]; every method runs on the
/// same shared `Arc<Self>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no MCP handlers",
    label = "expected a type whose `impl` block is annotated with `#[mcp::tools]`",
    note = "annotate the `impl {Self}` block with `#[mcp::tools]` and its methods with `#[tool]`, `#[prompt]` or `#[resource(\"uri\")]`"
)]
pub trait Handlers: Send + Sync + 'static {
    /// Registers every annotated method of `self` on `server`.
    fn register(self: std::sync::Arc<Self>, server: McpServer) -> McpServer;
}

impl McpServer {
    /// Registers every `#[tool]`, `#[prompt]` and `#[resource]` method of a type whose `impl`
    /// block is annotated with `#[mcp::tools]`. The methods share this one value (as an
    /// `Arc`), which is how a server keeps state across calls.
    pub fn register<T: Handlers>(self, handlers: impl Into<std::sync::Arc<T>>) -> Self {
        T::register(handlers.into(), self)
    }
}
