//! The README demo: a Bistro server and a client whose elicitation callback stands in for the
//! user at a terminal. Christmas is full, so the server asks for another date mid-call; the
//! deposit sends the user to a payment page.
//!
//! ```sh
//! cargo run --example demo                              # starts the Bistro in-process
//! cargo run --example demo -- http://127.0.0.1:8000/mcp # or a Bistro you started
//! ```

use std::collections::BTreeMap;

use mcp::ClientBuilderExt;
use mcp::client::{Client, Mode};
use mcp::types::elicitation::{ElicitRequestParams, ElicitResult, ElicitValue};
use mcp_examples::{bistro, cli};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let url = match std::env::args().nth(1) {
        Some(url) => url,
        None => cli::serve_in_background(bistro::server()).await?,
    };
    println!("Bistro at {url}");
    let client = Client::builder()
        // `book_table` asks with `ctx.elicit`, a live request of a 2025-11-25 session.
        .mode(Mode::Legacy)
        .elicitation(|_info, params| async move {
            match params {
                ElicitRequestParams::Url(params) => {
                    println!("  ? {}", params.message);
                    println!("  Open this link to continue: {}", params.url);
                    Ok(ElicitResult::accept_url())
                }
                ElicitRequestParams::Form(params) => {
                    println!("  ? {}", params.message);
                    let answer = BTreeMap::from([
                        ("accept_alternative".to_owned(), ElicitValue::Bool(true)),
                        ("date".to_owned(), ElicitValue::String("2025-12-27".into())),
                    ]);
                    println!("  > yes, 2025-12-27");
                    Ok(ElicitResult::accept(answer))
                }
            }
        })
        .connect_http(&url)
        .await?;

    println!("book_table(date=2025-12-25, party_size=2)");
    let booked = client
        .call_tool("book_table", json!({"date": "2025-12-25", "party_size": 2}))
        .await?;
    println!("  = {}", cli::text(&booked));

    println!("pay_deposit(booking_id=B-1225)");
    let deposit = client
        .call_tool("pay_deposit", json!({"booking_id": "B-1225"}))
        .await?;
    println!("  = {}", cli::text(&deposit));
    client.close().await;
    Ok(())
}
