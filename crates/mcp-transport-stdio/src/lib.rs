//! The Model Context Protocol over stdio: one JSON message per line.
//!
//! Package `keel-mcp-transport-stdio` on crates.io: `cargo add keel-mcp-transport-stdio`,
//! then `use mcp_transport_stdio::…`.
//!
//! - [`serve`] runs a server on the process's stdin and stdout (logs belong on stderr); an
//!   `initialize` starts a 2025-11-25 session, requests carrying the 2026-07-28 envelope are
//!   served statelessly, requests run concurrently, and EOF on stdin ends it cleanly after the
//!   requests in flight are answered. [`serve_io`] does the same on any reader and writer.
//! - [`StdioTransport`] is the client side: it spawns the server command, forwards its stderr
//!   to `tracing`, reports a dead child as a typed error, and shuts it down gracefully (close
//!   stdin, then terminate after a grace period).
//!
//! A server on stdin and stdout, and a client that starts it as a child process:
//!
//! ```no_run
//! # async fn demo(server: mcp_server_core::Server) -> Result<(), Box<dyn std::error::Error>> {
//! // The server's `main`:
//! mcp_transport_stdio::serve(server.into_service()).await?;
//!
//! // A client's:
//! let mut command = tokio::process::Command::new("my-mcp-server");
//! command.arg("--verbose");
//! let transport = mcp_transport_stdio::StdioTransport::spawn(command)?;
//! let client = mcp_client::Client::builder().connect(transport).await?;
//! println!("{:?}", client.list_all_tools().await?);
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod client;
mod lines;
mod server;

pub use client::{
    DEFAULT_CLIENT_MAX_LINE, GRACE_PERIOD, INCOMING_QUEUE, STDERR_TAIL_LINES, StdioOptions,
    StdioTransport,
};
pub use server::{
    DEFAULT_MAX_LINE, DEFAULT_OUTPUT_QUEUE, EOF_GRACE, StdioLimits, serve, serve_io, serve_io_with,
};
