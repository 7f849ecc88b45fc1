//! Briefing: a prompt that asks who the briefing is for before it renders.
//!
//! ```sh
//! cargo run --example briefing                          # stdio
//! cargo run --example briefing -- --http 127.0.0.1:8000 # http://127.0.0.1:8000/mcp
//! ```

use mcp_examples::{briefing, cli};

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    cli::run(briefing::server()).await
}
