//! The Deployer: request state sealed by an envelope codec of its own (`kms1.` + hex).
//!
//! ```sh
//! cargo run --example deployer                          # stdio
//! cargo run --example deployer -- --http 127.0.0.1:8000 # http://127.0.0.1:8000/mcp
//! ```

use mcp_examples::deployer::{self, EnvelopeCodec};

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    // In production the data key comes from your KMS, unwrapped once at start.
    let codec = EnvelopeCodec::random()?;
    mcp_examples::cli::run(deployer::server(codec)).await
}
