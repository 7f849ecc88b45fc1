//! The futures every layer of the server shares, at the bottom of the crate: the boxed future
//! handlers return, their result type, and the wrapper that turns a panic into an answer.

use mcp_types::ErrorObject;

/// What a handler returns: its result, or a JSON-RPC error for the client.
pub type HandlerResult<T> = Result<T, ErrorObject>;

pub use mcp_types::BoxFuture;

/// Runs a request's future and turns a panic in it into `None`, so a panicking handler gets an
/// error response instead of leaving its client waiting.
pub(crate) struct CatchUnwind<'a, T>(
    pub(crate) std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>,
);

impl<T> std::future::Future for CatchUnwind<'_, T> {
    type Output = Option<T>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<T>> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || inner.poll(cx))) {
            Ok(std::task::Poll::Ready(value)) => std::task::Poll::Ready(Some(value)),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Err(_) => std::task::Poll::Ready(None),
        }
    }
}
