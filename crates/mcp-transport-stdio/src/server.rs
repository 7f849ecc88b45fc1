//! The server side: read lines, feed them to one session, write every message the session
//! produces as one line.

use std::sync::Arc;

use mcp_server_core::{ResponseStream, Service, TransportContext};
use mcp_types::jsonrpc::ErrorResponseId;
use mcp_types::{ErrorCode, ErrorObject, JsonObject, JsonRpcError, JsonRpcMessage};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::lines::{KEPT_CAPACITY, Line, read_line};

/// Serves `service` on stdin/stdout until stdin closes.
///
/// ```no_run
/// use mcp_server_core::registry::{McpServer, ToolDef};
///
/// # #[tokio::main]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let ping = ToolDef::new("ping").handler(|_ctx, _args: serde_json::Value| async { "pong" });
/// let service = McpServer::new("Ping").tool(ping).into_service()?;
/// mcp_transport_stdio::serve(service).await?; // returns when stdin closes
/// # Ok(())
/// # }
/// ```
///
/// When both are pipes (as when a client spawns the server), they are read and written through
/// the runtime's reactor; otherwise (a terminal, a file) through tokio's `stdin()`/`stdout()`,
/// which hand every read and write to a blocking thread.
pub async fn serve(service: Service) -> std::io::Result<()> {
    // The loop runs as a task, so that under a multi-thread runtime it shares a worker with the
    // request tasks it spawns instead of waking one from the thread that called `block_on`.
    let serving = async move {
        #[cfg(unix)]
        if let Some((reader, writer)) = pipes::stdio()? {
            return serve_io(service, reader, writer).await;
        }
        serve_io(service, tokio::io::stdin(), tokio::io::stdout()).await
    };
    tokio::spawn(serving).await.map_err(std::io::Error::other)?
}

/// stdin and stdout as non-blocking pipes registered with the reactor. Profiling the stdio
/// benchmark (`cargo xtask bench`) showed the two blocking-pool hand-offs per message of
/// `tokio::io::stdin()`/`stdout()` as the largest cost of a round trip.
#[cfg(unix)]
mod pipes {
    use std::io;
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt;

    use tokio::net::unix::pipe;

    fn is_pipe(fd: &OwnedFd) -> io::Result<bool> {
        let file = std::fs::File::from(fd.try_clone()?);
        Ok(file.metadata()?.file_type().is_fifo())
    }

    /// Copies of fds 0 and 1 as reactor pipes, when both are pipes; `None` (and neither is
    /// touched) otherwise. The copies share their open file descriptions with fds 0 and 1, which
    /// become non-blocking: stdout belongs to the protocol anyway, and a server must not print
    /// to it.
    pub(super) fn stdio() -> io::Result<Option<(pipe::Receiver, pipe::Sender)>> {
        let stdin = io::stdin().as_fd().try_clone_to_owned()?;
        let stdout = io::stdout().as_fd().try_clone_to_owned()?;
        if !is_pipe(&stdin)? || !is_pipe(&stdout)? {
            return Ok(None);
        }
        Ok(Some((
            pipe::Receiver::from_owned_fd(stdin)?,
            pipe::Sender::from_owned_fd(stdout)?,
        )))
    }
}

/// The longest line read unless configured: a longer one is answered
/// `-32600 "The message exceeds the N-byte line limit"` and skipped up to its newline.
pub const DEFAULT_MAX_LINE: usize = 4 * 1024 * 1024;
/// How many messages of requests still running (and notifications from elsewhere) wait for
/// stdout unless configured. When the peer stops reading, their handlers wait; an answer that
/// was ready when its request was read is written by the read loop itself, so input stops
/// being read until stdout takes it.
pub const DEFAULT_OUTPUT_QUEUE: usize = 64;
/// How long, at end of input, requests still running may take to answer before the session
/// is closed.
pub const EOF_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// What the stdio server lets its peer make it hold. The in-flight cap is the service's
/// (`SessionLimits::max_in_flight`): when it is reached, no more input is read until a request
/// finishes.
#[derive(Debug, Clone)]
pub struct StdioLimits {
    /// The longest line, in bytes (default [`DEFAULT_MAX_LINE`]).
    pub max_line: usize,
    /// Messages queued for the writer (default [`DEFAULT_OUTPUT_QUEUE`]).
    pub output_queue: usize,
}

impl Default for StdioLimits {
    fn default() -> Self {
        StdioLimits {
            max_line: DEFAULT_MAX_LINE,
            output_queue: DEFAULT_OUTPUT_QUEUE,
        }
    }
}

/// Serves `service` on any byte stream pair (sockets, pipes, tests).
pub async fn serve_io<R, W>(service: Service, reader: R, writer: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_io_with(service, reader, writer, StdioLimits::default()).await
}

/// [`serve_io`] under `limits`.
pub async fn serve_io_with<R, W>(
    service: Service,
    reader: R,
    writer: W,
    limits: StdioLimits,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, mut out_rx) = mpsc::channel::<JsonRpcMessage>(limits.output_queue.max(1));
    let output = Arc::new(tokio::sync::Mutex::new(Output {
        writer,
        line: Vec::with_capacity(1024),
    }));
    // Messages that are not ready when their request is read (a request still running, a
    // notification from elsewhere) are written by this task; the rest by the read loop.
    let queued_output = output.clone();
    let writer_task = tokio::spawn(async move {
        while let Some(message) = out_rx.recv().await {
            queued_output.lock().await.write([message]).await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let (session, mut unsolicited) = service.connect(TransportContext {
        network_transport: Some("pipe"),
        ..TransportContext::default()
    });
    let in_flight_cap = Arc::new(Semaphore::new(session.limits().max_in_flight.max(1)));
    let forward = out_tx.clone();
    let unsolicited_task = tokio::spawn(async move {
        while let Some(message) = unsolicited.recv().await {
            if forward.send(message).await.is_err() {
                return;
            }
        }
    });
    let mut in_flight = JoinSet::new();
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    // The messages a request has ready when it is read, written at once (reused).
    let mut ready: Vec<JsonRpcMessage> = Vec::new();
    let mut failed = None;
    loop {
        // Backpressure: with the cap reached, nothing more is read until a request finishes.
        let Ok(permit) = in_flight_cap.clone().acquire_owned().await else {
            break;
        };
        let stream = match read_line(&mut reader, &mut line, limits.max_line).await {
            Ok(Line::Eof) => break,
            Ok(Line::Full) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                // Bytes that are not UTF-8 JSON get the parse error like any other bad line.
                session.handle_bytes(&line)
            }
            Ok(Line::TooLong(_)) => Some(too_long(limits.max_line)),
            Err(e) => {
                tracing::warn!(error = %e, "stdin failed; stopping");
                break;
            }
        };
        if let Some(mut stream) = stream {
            // Whatever the request already produced (for most requests: everything, its
            // answer included) is written here, on the read loop, without a hop through the
            // writer task; a request still running forwards the rest from a task of its own.
            let finished = take_ready(&mut stream, &mut ready);
            if !ready.is_empty()
                && let Err(e) = output.lock().await.write(ready.drain(..)).await
            {
                tracing::warn!(error = %e, "stdout failed; stopping");
                failed = Some(e);
                break;
            }
            if !finished {
                let out = out_tx.clone();
                in_flight.spawn(async move {
                    let _permit = permit;
                    while let Some(message) = stream.next().await {
                        if out.send(message).await.is_err() {
                            return;
                        }
                    }
                });
            }
        }
        // Reap finished requests so the set does not grow without bound.
        while in_flight.try_join_next().is_some() {}
    }
    // EOF: nobody is left to end a listen stream or answer a question, so those end now; the
    // other requests in flight still get their answers (within the grace), then the session
    // ends.
    session.end_streams();
    let drain = async { while in_flight.join_next().await.is_some() {} };
    if tokio::time::timeout(EOF_GRACE, drain).await.is_err() {
        tracing::warn!("requests were still running at the end of input; cancelling them");
    }
    session.close();
    in_flight.shutdown().await;
    drop(session);
    unsolicited_task.abort();
    drop(out_tx);
    let written = writer_task.await.map_err(std::io::Error::other)?;
    match failed {
        Some(e) => Err(e),
        None => written,
    }
}

/// The answer to a line longer than `max_line`, which was skipped up to its newline.
fn too_long(max_line: usize) -> ResponseStream {
    ResponseStream::ready(JsonRpcMessage::Error(JsonRpcError {
        id: ErrorResponseId::Null,
        error: ErrorObject::new(
            ErrorCode::INVALID_REQUEST,
            format!("The message exceeds the {max_line}-byte line limit"),
        ),
        extra: JsonObject::new(),
    }))
}

/// Moves the messages `stream` already holds into `ready`, without waiting; `true` when the
/// stream has ended (the request answered), `false` when it is still running.
fn take_ready(stream: &mut ResponseStream, ready: &mut Vec<JsonRpcMessage>) -> bool {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        match stream.poll_next(&mut cx) {
            std::task::Poll::Ready(Some(message)) => ready.push(message),
            std::task::Poll::Ready(None) => return true,
            std::task::Poll::Pending => return false,
        }
    }
}

/// Where every line goes: stdout and one buffer each message is serialized straight into.
struct Output<W> {
    writer: W,
    line: Vec<u8>,
}

impl<W: AsyncWrite + Unpin> Output<W> {
    /// Writes `messages`, one line each, with one write and one flush.
    async fn write(
        &mut self,
        messages: impl IntoIterator<Item = JsonRpcMessage>,
    ) -> std::io::Result<()> {
        self.line.clear();
        for message in messages {
            serde_json::to_writer(&mut self.line, &message).map_err(std::io::Error::other)?;
            self.line.push(b'\n');
        }
        let written = self.writer.write_all(&self.line).await;
        let flushed = match written {
            Ok(()) => self.writer.flush().await,
            Err(e) => Err(e),
        };
        self.line.shrink_to(KEPT_CAPACITY);
        flushed
    }
}
