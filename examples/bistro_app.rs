//! Bistro with its booking app (MCP Apps, `io.modelcontextprotocol/ui`): `book_table` links to
//! `ui://bistro/booking`, which a host that declares the extension renders.
//!
//! ```sh
//! cargo run --example bistro_app -- --http 127.0.0.1:8000 # http://127.0.0.1:8000/mcp
//! ```

use mcp_examples::{bistro_app, cli};

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    cli::run(bistro_app::server()).await
}
