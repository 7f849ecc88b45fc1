//! Response bodies: nothing, one JSON document, or a server-sent-event stream fed by a
//! request's [`ResponseStream`] (dropping the body, as hyper does when the client goes away,
//! drops the stream, which cancels the handler).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use mcp_server_core::ResponseStream;
use mcp_types::JsonRpcMessage;
use tokio::sync::mpsc;

/// How often an open SSE stream gets a keep-alive comment.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

enum Source {
    Request(ResponseStream),
    Session(mpsc::UnboundedReceiver<JsonRpcMessage>),
}

/// The body of every response the MCP endpoint sends.
pub struct McpBody {
    kind: Kind,
}

enum Kind {
    Empty,
    Full(Option<Bytes>),
    Sse {
        first: Option<JsonRpcMessage>,
        source: Source,
        keep_alive: Pin<Box<tokio::time::Sleep>>,
    },
}

impl std::fmt::Debug for McpBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.kind {
            Kind::Empty => "McpBody::Empty",
            Kind::Full(_) => "McpBody::Full",
            Kind::Sse { .. } => "McpBody::Sse",
        })
    }
}

impl McpBody {
    /// No body.
    pub fn empty() -> Self {
        McpBody { kind: Kind::Empty }
    }

    /// A complete body.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        McpBody {
            kind: Kind::Full(Some(bytes.into())),
        }
    }

    /// An SSE stream of a request's messages, starting with `first`.
    pub(crate) fn sse(first: Option<JsonRpcMessage>, stream: ResponseStream) -> Self {
        Self::sse_from(first, Source::Request(stream))
    }

    /// An SSE stream of a legacy session's unsolicited messages (the GET stream).
    pub(crate) fn session_sse(rx: mpsc::UnboundedReceiver<JsonRpcMessage>) -> Self {
        Self::sse_from(None, Source::Session(rx))
    }

    fn sse_from(first: Option<JsonRpcMessage>, source: Source) -> Self {
        McpBody {
            kind: Kind::Sse {
                first,
                source,
                keep_alive: Box::pin(tokio::time::sleep(KEEP_ALIVE)),
            },
        }
    }
}

fn event(message: &JsonRpcMessage) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

impl Body for McpBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.kind {
            Kind::Empty => Poll::Ready(None),
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Sse {
                first,
                source,
                keep_alive,
            } => {
                if let Some(message) = first.take() {
                    return Poll::Ready(Some(Ok(Frame::data(event(&message)))));
                }
                let next = match source {
                    Source::Request(stream) => stream.poll_next(cx),
                    Source::Session(rx) => rx.poll_recv(cx),
                };
                match next {
                    Poll::Ready(Some(message)) => {
                        keep_alive
                            .as_mut()
                            .reset(tokio::time::Instant::now() + KEEP_ALIVE);
                        Poll::Ready(Some(Ok(Frame::data(event(&message)))))
                    }
                    Poll::Ready(None) => Poll::Ready(None),
                    Poll::Pending => match keep_alive.as_mut().poll(cx) {
                        Poll::Ready(()) => {
                            keep_alive
                                .as_mut()
                                .reset(tokio::time::Instant::now() + KEEP_ALIVE);
                            Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b": ping\n\n")))))
                        }
                        Poll::Pending => Poll::Pending,
                    },
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Empty => true,
            Kind::Full(b) => b.is_none(),
            Kind::Sse { .. } => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Empty => SizeHint::with_exact(0),
            Kind::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Kind::Full(None) => SizeHint::with_exact(0),
            Kind::Sse { .. } => SizeHint::default(),
        }
    }
}
