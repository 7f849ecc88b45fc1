//! fleet: instances that share their request-state keys, so any instance finishes a round
//! another one started. Run two and point a client at both:
//!
//! ```sh
//! export MCP_STATE_KEYS="$(openssl rand -base64 32)"
//! cargo run --example fleet -- --http 127.0.0.1:8001 &
//! cargo run --example fleet -- --http 127.0.0.1:8002 &
//! ```
//!
//! To rotate, deploy `MCP_STATE_KEYS=OLD,NEW`, then `NEW,OLD`, then (after ten minutes) `NEW`.

use mcp_examples::fleet;

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    let keys = std::env::var(fleet::KEYS_VAR).map_err(|_| {
        format!(
            "set {} to the fleet's shared secrets (comma-separated, sealing key first, 32 bytes or more each)",
            fleet::KEYS_VAR
        )
    })?;
    let security = fleet::security_from(&keys)?;
    mcp_examples::cli::run(fleet::server(security)).await
}
