//! The client side of a connection: any transport (stdio, HTTP, a socket, a queue, memory)
//! moves JSON-RPC messages both ways. A third party implements [`Transport`] and nothing
//! else.

use mcp_types::{JsonRpcMessage, RequestId};

pub use mcp_types::BoxFuture;

/// A duplex message channel to one server.
///
/// The client calls [`send`](Transport::send) for every request, notification and response it
/// writes, and one reader task calls [`receive`](Transport::receive) in a loop. An HTTP
/// transport turns each sent request into a POST and feeds what comes back (JSON or SSE) to
/// `receive`; a `notifications/cancelled` for a request it is streaming means "drop that
/// stream".
pub trait Transport: Send + Sync + 'static {
    /// Writes one message.
    fn send(&self, message: JsonRpcMessage) -> BoxFuture<'_, Result<(), String>>;

    /// The next message from the server, or `None` once the connection is closed.
    fn receive(&self) -> BoxFuture<'_, Option<JsonRpcMessage>>;

    /// Why the connection ended, once [`receive`](Transport::receive) returned `None` (e.g.
    /// "the server process exited with status 1").
    fn error(&self) -> Option<String> {
        None
    }

    /// Why the error answer to request `id` was made up by the transport itself (the request
    /// never reached the server, or what came back was not MCP), so the client reports a
    /// transport error rather than a server's. Each failure is reported once.
    fn local_failure(&self, id: &RequestId) -> Option<String> {
        let _ = id;
        None
    }

    /// Closes the connection (stdio: close stdin, then stop the child).
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
