//! The server side: read lines, feed them to one session, write every message the session
//! produces as one line.

use mcp_server_core::{Service, TransportContext};
use mcp_types::JsonRpcMessage;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// Serves `service` on stdin/stdout until stdin closes.
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

/// Serves `service` on any byte stream pair (sockets, pipes, tests).
pub async fn serve_io<R, W>(service: Service, reader: R, writer: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<JsonRpcMessage>();
    let writer_task = tokio::spawn(async move {
        let mut writer = writer;
        while let Some(message) = out_rx.recv().await {
            let mut line = message.to_string();
            line.push('\n');
            writer.write_all(line.as_bytes()).await?;
            writer.flush().await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let (session, mut unsolicited) = service.connect(TransportContext::default());
    let forward = out_tx.clone();
    let unsolicited_task = tokio::spawn(async move {
        while let Some(message) = unsolicited.recv().await {
            if forward.send(message).is_err() {
                return;
            }
        }
    });
    let mut in_flight = JoinSet::new();
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "stdin failed; stopping");
                break;
            }
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // Bytes that are not UTF-8 JSON get the parse error like any other bad line.
        if let Some(mut stream) = session.handle_bytes(&line) {
            let out = out_tx.clone();
            in_flight.spawn(async move {
                while let Some(message) = stream.next().await {
                    if out.send(message).is_err() {
                        return;
                    }
                }
            });
        }
        // Reap finished requests so the set does not grow without bound.
        while in_flight.try_join_next().is_some() {}
    }
    // EOF: the requests in flight still get their answers, then the session ends.
    while in_flight.join_next().await.is_some() {}
    session.close();
    drop(session);
    unsolicited_task.abort();
    drop(out_tx);
    writer_task.await.map_err(std::io::Error::other)?
}
