//! The Builds server: `run_build` runs as a task and asks for confirmation halfway.
//!
//! ```sh
//! cargo run --example builds                          # stdio
//! cargo run --example builds -- --http 127.0.0.1:8000 # http://127.0.0.1:8000/mcp
//! ```

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    mcp_examples::cli::run(mcp_examples::builds::server()).await
}
