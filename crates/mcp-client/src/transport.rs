//! The client side of a connection: any transport (stdio, HTTP, a socket, a queue, memory)
//! moves JSON-RPC messages both ways. A third party implements [`Transport`] and nothing
//! else.

use std::time::Duration;

use mcp_types::{JsonRpcMessage, RequestId};

pub use mcp_types::BoxFuture;

/// A request the transport answered itself, with an error it made up: why, and whether the
/// server may have run it. The client re-sends a request that is safe to repeat when the
/// failure is not [`Delivery::Final`], and tells the caller which it was otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalFailure {
    /// Why the request failed, for the caller.
    pub why: String,
    /// Whether the server may have run it.
    pub delivery: Delivery,
    /// How long the server asked the client to wait before trying again (`Retry-After`).
    pub retry_after: Option<Duration>,
}

impl LocalFailure {
    /// A failure that sending again would not mend (an answer over a size limit, a refused
    /// authorization...).
    pub fn fatal(why: impl Into<String>) -> Self {
        LocalFailure {
            why: why.into(),
            delivery: Delivery::Final,
            retry_after: None,
        }
    }
}

/// What the transport knows of a request it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// The server did not process it: the connection could not be opened, the server lost
    /// the session before reading it (404), or it answered `503`/`429`.
    NotProcessed,
    /// It may have run: the connection broke after it was sent, the answer's stream ended
    /// early, or what came back was cut short or not MCP (`502`, `504`).
    Unknown,
    /// Sending it again would fail the same way.
    Final,
}

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
    /// transport error rather than a server's, and whether it may have run. Each failure is
    /// reported once.
    fn local_failure(&self, id: &RequestId) -> Option<LocalFailure> {
        let _ = id;
        None
    }

    /// The authorization this connection's requests carry, as an opaque digest (never the
    /// credential itself), or `None` without one: the client's response cache files a
    /// `private` result under it and serves it to no other.
    fn principal(&self) -> Option<String> {
        None
    }

    /// Which server this connection reaches, as text that tells it from every other server
    /// this process may reach: an HTTP transport's URL, a stdio transport's command and
    /// arguments. The response cache files results under it, so that a store shared by
    /// several clients never answers one server's request with another's result. `None` (the
    /// default) keeps a client's cached results to that client alone.
    fn server_identity(&self) -> Option<String> {
        None
    }

    /// Closes the connection (stdio: close stdin, then stop the child).
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
