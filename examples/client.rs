//! A client whose elicitation callback answers for the user, so the multi-round-trip loop
//! stays invisible: `call_tool` returns the final result.
//!
//! ```sh
//! cargo run --example client                              # starts a Provisioner in-process
//! cargo run --example client -- http://127.0.0.1:8000/mcp # or any Provisioner you started
//! ```

use std::collections::BTreeMap;

use mcp::ClientBuilderExt;
use mcp::client::Client;
use mcp::types::elicitation::{ElicitResult, ElicitValue};
use mcp_examples::{cli, provisioner};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let url = match std::env::args().nth(1) {
        Some(url) => url,
        None => {
            let server = provisioner::server(mcp::RequestStateSecurity::ephemeral())?;
            cli::serve_in_background(server).await?
        }
    };
    let client = Client::builder()
        .elicitation(|_info, params| async move {
            println!("server asks: {}", params.message());
            let region = ElicitValue::String("eu-west-1".into());
            Ok(ElicitResult::accept(BTreeMap::from([(
                "region".to_owned(),
                region,
            )])))
        })
        .connect_http(&url)
        .await?;
    let result = client
        .call_tool("provision", json!({"name": "orders"}))
        .await?;
    println!("{}", cli::text(&result));
    Ok(())
}
