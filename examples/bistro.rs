//! Bistro: `book_table` asks mid-call for another date when Christmas is full, `pay_deposit`
//! sends the user to a payment page (URL elicitation), and `confirm_deposit` announces the
//! payment's completion. The questions are live requests, so they need a 2025-11-25 session.
//!
//! ```sh
//! cargo run --example bistro                          # stdio
//! cargo run --example bistro -- --http 127.0.0.1:8000 # http://127.0.0.1:8000/mcp
//! ```

use mcp_examples::{bistro, cli};

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    cli::run(bistro::server()).await
}
