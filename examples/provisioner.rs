//! The Provisioner: a low-level `Server` whose tool asks for a region with a hand-built round.
//!
//! ```sh
//! cargo run --example provisioner                          # stdio
//! cargo run --example provisioner -- --http 127.0.0.1:8000 # http://127.0.0.1:8000/mcp
//! ```

use mcp::RequestStateSecurity;
use mcp_examples::{cli, provisioner};

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    cli::run(provisioner::server(RequestStateSecurity::ephemeral())?).await
}
