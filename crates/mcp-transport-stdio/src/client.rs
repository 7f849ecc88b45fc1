//! The client side: spawn the server command, talk to it over its stdin/stdout, forward its
//! stderr to `tracing` (control characters escaped), and notice when it dies. Lines longer
//! than [`StdioOptions::max_line`] and lines that are not UTF-8 are refused one by one; the
//! stream goes on.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{BoxFuture, Transport};
use mcp_types::JsonRpcMessage;
use tokio::io::{AsyncWriteExt, BufReader};

use crate::lines::{Line, read_line};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

/// How long a closed server gets to exit on its own before it is killed.
pub const GRACE_PERIOD: Duration = Duration::from_secs(2);

/// The default of [`StdioOptions::max_line`]: 16 MiB.
pub const DEFAULT_CLIENT_MAX_LINE: usize = 16 * 1024 * 1024;
/// How many messages read from the server's stdout wait for the client's reader at most.
/// When it is behind, reading stops and the server's writes wait (its stdout pipe fills)
/// instead of the queue growing with whatever the server writes.
pub const INCOMING_QUEUE: usize = 256;
/// The longest stderr line forwarded to `tracing`; longer ones are cut to it.
const MAX_STDERR_LINE: usize = 16 * 1024;
/// How many of the server's last stderr lines the error of a dead server quotes.
pub const STDERR_TAIL_LINES: usize = 5;
/// How many characters of each of those lines are quoted.
const STDERR_TAIL_CHARS: usize = 200;
/// How long a dead server's exit status and last stderr lines are waited for.
const EXIT_WAIT: Duration = Duration::from_millis(500);

/// How a [`StdioTransport`] treats what its child writes.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StdioOptions {
    /// The longest stdout line (one JSON-RPC message) accepted, in bytes (default
    /// [`DEFAULT_CLIENT_MAX_LINE`]). A longer line is skipped up to its newline and refused with a
    /// warning ("the server wrote a line of N bytes, over the M-byte limit"), and reading goes
    /// on; nothing more than the limit is ever buffered.
    pub max_line: usize,
}

impl Default for StdioOptions {
    fn default() -> Self {
        StdioOptions {
            max_line: DEFAULT_CLIENT_MAX_LINE,
        }
    }
}

impl StdioOptions {
    /// Sets [`max_line`](Self::max_line).
    pub fn max_line(mut self, bytes: usize) -> Self {
        self.max_line = bytes;
        self
    }
}

/// A stderr line made safe for a log or a terminal: invalid UTF-8 replaced, control
/// characters (ANSI escapes, `\r`, backspace...) and bidirectional overrides escaped as
/// `\u{..}`.
fn sanitize(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let text = text.strip_suffix('\r').unwrap_or(&text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let bidi = matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
        if (c.is_control() && c != '\t') || bidi {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// A server process spoken to over stdio.
#[derive(Debug)]
pub struct StdioTransport {
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    incoming: tokio::sync::Mutex<mpsc::Receiver<JsonRpcMessage>>,
    child: tokio::sync::Mutex<Option<Child>>,
    ended: Arc<Mutex<Option<String>>>,
    /// The server's last stderr lines (sanitized, cut), for the error of a dead server.
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// The server's stderr reached its end (or there is none).
    stderr_done: Arc<AtomicBool>,
    /// The command, its arguments and its directory: which server this is, for the
    /// client's response cache.
    identity: String,
}

impl StdioTransport {
    /// Spawns `command` with piped stdin, stdout and stderr.
    pub fn spawn(command: Command) -> std::io::Result<Self> {
        Self::spawn_with(command, StdioOptions::default())
    }

    /// [`spawn`](Self::spawn) with limits other than the defaults.
    pub fn spawn_with(mut command: Command, options: StdioOptions) -> std::io::Result<Self> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let identity = {
            let std = command.as_std();
            let args: Vec<_> = std.get_args().collect();
            format!(
                "stdio {:?} {args:?} in {:?}",
                std.get_program(),
                std.get_current_dir()
            )
        };
        let mut child = command.spawn()?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("the child has no stdout"))?;
        let stderr = child.stderr.take();
        let (tx, rx) = mpsc::channel(INCOMING_QUEUE);
        let ended = Arc::new(Mutex::new(None));
        let problems = ended.clone();
        let max_line = options.max_line;
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout);
            let mut bytes = Vec::new();
            let refuse = |why: String| {
                // A server that writes anything but protocol on stdout misbehaves; say so,
                // and keep reading.
                tracing::warn!(%why, "a line from the server was refused");
                if let Ok(mut p) = problems.lock() {
                    p.get_or_insert(why);
                }
            };
            loop {
                let line = match read_line(&mut reader, &mut bytes, max_line).await {
                    Ok(Line::Full) => match std::str::from_utf8(&bytes) {
                        Ok(line) => Ok(Some(line)),
                        Err(e) => {
                            refuse(format!(
                                "the server wrote a line on stdout that is not UTF-8 ({e}); it was dropped"
                            ));
                            continue;
                        }
                    },
                    Ok(Line::TooLong(n)) => {
                        refuse(format!(
                            "the server wrote a line of {n} bytes, over the {max_line}-byte limit \
                             (StdioOptions::max_line); it was dropped"
                        ));
                        continue;
                    }
                    Ok(Line::Eof) => Ok(None),
                    Err(e) => Err(e),
                };
                match line {
                    Ok(Some(line)) if line.trim().is_empty() => continue,
                    Ok(Some(line)) => match JsonRpcMessage::from_str(line) {
                        // Waits while the client's reader is behind: the server's writes to
                        // its stdout wait with it (the pipe fills) instead of this queue
                        // growing with whatever the server writes.
                        Ok(message) => {
                            if tx.send(message).await.is_err() {
                                return;
                            }
                        }
                        Err(e) => refuse(format!(
                            "the server wrote a line that is not a JSON-RPC message ({e})"
                        )),
                    },
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "reading the server's stdout failed");
                        break;
                    }
                }
            }
        });
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let stderr_done = Arc::new(AtomicBool::new(stderr.is_none()));
        if let Some(stderr) = stderr {
            let (tail, done) = (stderr_tail.clone(), stderr_done.clone());
            tokio::spawn(async move {
                let mut reader = BufReader::new(stderr);
                let mut bytes = Vec::new();
                loop {
                    match read_line(&mut reader, &mut bytes, MAX_STDERR_LINE).await {
                        Ok(Line::Full) => {
                            let line = sanitize(&bytes);
                            tracing::info!(target: "mcp_transport_stdio::server", "{line}");
                            if let Ok(mut tail) = tail.lock() {
                                if tail.len() == STDERR_TAIL_LINES {
                                    tail.pop_front();
                                }
                                tail.push_back(line.chars().take(STDERR_TAIL_CHARS).collect());
                            }
                        }
                        Ok(Line::TooLong(n)) => {
                            tracing::info!(target: "mcp_transport_stdio::server", "(a stderr line of {n} bytes, over the {MAX_STDERR_LINE}-byte limit, was dropped)");
                        }
                        Ok(Line::Eof) | Err(_) => break,
                    }
                }
                done.store(true, Ordering::Release);
            });
        }
        Ok(StdioTransport {
            stdin: tokio::sync::Mutex::new(stdin),
            incoming: tokio::sync::Mutex::new(rx),
            child: tokio::sync::Mutex::new(Some(child)),
            ended,
            stderr_tail,
            stderr_done,
            identity,
        })
    }

    /// Notes the server's exit status and its last stderr lines once it has exited, waiting
    /// a moment for both (its stdout or stdin closed: it is exiting).
    async fn record_exit(&self) {
        let started = tokio::time::Instant::now();
        loop {
            let status = {
                let mut child = self.child.lock().await;
                child.as_mut().and_then(|c| c.try_wait().ok().flatten())
            };
            let stderr_done = self.stderr_done.load(Ordering::Acquire);
            if let Some(status) = status
                && (stderr_done || started.elapsed() >= EXIT_WAIT)
            {
                let tail: Vec<String> = self
                    .stderr_tail
                    .lock()
                    .map(|t| t.iter().cloned().collect())
                    .unwrap_or_default();
                let mut why = format!("the server process exited with {status}");
                if !tail.is_empty() {
                    why.push_str("; its last lines on stderr: ");
                    why.push_str(&tail.join(" / "));
                }
                if let Ok(mut ended) = self.ended.lock() {
                    *ended = Some(why);
                }
                return;
            }
            if started.elapsed() >= EXIT_WAIT {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Transport for StdioTransport {
    fn server_identity(&self) -> Option<String> {
        Some(self.identity.clone())
    }

    fn send(&self, message: JsonRpcMessage) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let mut stdin = self.stdin.lock().await;
            let Some(stdin) = stdin.as_mut() else {
                return Err("the connection is closed".to_owned());
            };
            let mut line = message.to_string();
            line.push('\n');
            let written = async {
                stdin.write_all(line.as_bytes()).await?;
                stdin.flush().await
            };
            match written.await {
                Ok(()) => Ok(()),
                Err(e) => {
                    self.record_exit().await;
                    Err(self
                        .error()
                        .unwrap_or_else(|| format!("writing to the server failed: {e}")))
                }
            }
        })
    }

    fn receive(&self) -> BoxFuture<'_, Option<JsonRpcMessage>> {
        Box::pin(async move {
            let message = self.incoming.lock().await.recv().await;
            if message.is_none() {
                // stdout closed: wait a moment for the exit status, so the error can name it.
                self.record_exit().await;
            }
            message
        })
    }

    fn error(&self) -> Option<String> {
        self.ended.lock().ok().and_then(|e| e.clone())
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // Closing stdin asks the server to exit; after the grace period it is killed.
            self.stdin.lock().await.take();
            let mut child = self.child.lock().await;
            if let Some(mut c) = child.take() {
                match tokio::time::timeout(GRACE_PERIOD, c.wait()).await {
                    Ok(_) => {}
                    Err(_) => {
                        tracing::warn!(
                            "the server did not exit within the grace period; killing it"
                        );
                        let _ = c.kill().await;
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_control_characters_are_escaped() {
        assert_eq!(
            sanitize(b"\x1b[2J\x1b]0;pwned\x07ok\tfine\rhidden\r"),
            "\\u{1b}[2J\\u{1b}]0;pwned\\u{7}ok\tfine\\u{d}hidden"
        );
        assert_eq!(
            sanitize("evil\u{202E}txt.exe".as_bytes()),
            "evil\\u{202e}txt.exe"
        );
        assert_eq!(sanitize(b"caf\xc3\xa9 \xff"), "café \u{fffd}");
    }
}
