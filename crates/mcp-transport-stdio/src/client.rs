//! The client side: spawn the server command, talk to it over its stdin/stdout, forward its
//! stderr to `tracing`, and notice when it dies.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{BoxFuture, Transport};
use mcp_types::JsonRpcMessage;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

/// How long a closed server gets to exit on its own before it is killed.
pub const GRACE_PERIOD: Duration = Duration::from_secs(2);

/// A server process spoken to over stdio.
#[derive(Debug)]
pub struct StdioTransport {
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    incoming: tokio::sync::Mutex<mpsc::UnboundedReceiver<JsonRpcMessage>>,
    child: tokio::sync::Mutex<Option<Child>>,
    ended: Arc<Mutex<Option<String>>>,
}

impl StdioTransport {
    /// Spawns `command` with piped stdin, stdout and stderr.
    pub fn spawn(mut command: Command) -> std::io::Result<Self> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("the child has no stdout"))?;
        let stderr = child.stderr.take();
        let (tx, rx) = mpsc::unbounded_channel();
        let ended = Arc::new(Mutex::new(None));
        let problems = ended.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            loop {
                match lines.next_line().await {
                    Ok(Some(line)) if line.trim().is_empty() => continue,
                    Ok(Some(line)) => match JsonRpcMessage::from_str(&line) {
                        Ok(message) => {
                            if tx.send(message).is_err() {
                                return;
                            }
                        }
                        Err(e) => {
                            // A server that writes anything but protocol on stdout misbehaves;
                            // say so, and keep reading.
                            tracing::warn!(error = %e, "the server wrote a line on stdout that is not a JSON-RPC message");
                            if let Ok(mut p) = problems.lock() {
                                p.get_or_insert_with(|| format!("the server wrote a line that is not a JSON-RPC message ({e})"));
                            }
                        }
                    },
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "reading the server's stdout failed");
                        break;
                    }
                }
            }
        });
        if let Some(stderr) = stderr {
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::info!(target: "mcp_transport_stdio::server", "{line}");
                }
            });
        }
        Ok(StdioTransport {
            stdin: tokio::sync::Mutex::new(stdin),
            incoming: tokio::sync::Mutex::new(rx),
            child: tokio::sync::Mutex::new(Some(child)),
            ended,
        })
    }

    async fn record_exit(&self) {
        let mut child = self.child.lock().await;
        if let Some(c) = child.as_mut()
            && let Ok(Some(status)) = c.try_wait()
            && let Ok(mut ended) = self.ended.lock()
        {
            *ended = Some(format!("the server process exited with {status}"));
        }
    }
}

impl Transport for StdioTransport {
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
                for _ in 0..20 {
                    self.record_exit().await;
                    if self.ended.lock().map(|e| e.is_some()).unwrap_or(true) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
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
