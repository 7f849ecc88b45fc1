//! A client that follows a task: `call_tool` on `run_build` gets a task, polls it, shows its
//! progress, answers its question with the elicitation callback, and prints the result.
//!
//! ```sh
//! cargo run --example builds-client                              # starts Builds in-process
//! cargo run --example builds-client -- http://127.0.0.1:8000/mcp # or a Builds you started
//! ```

use std::collections::BTreeMap;

use mcp::ClientBuilderExt;
use mcp::client::Client;
use mcp::types::elicitation::{ElicitResult, ElicitValue};
use mcp_examples::{builds, cli};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let url = match std::env::args().nth(1) {
        Some(url) => url,
        None => cli::serve_in_background(builds::server()).await?,
    };
    let client = Client::builder()
        .tasks(true)
        .on_task_status(|task| {
            if let Some(message) = &task.task.status_message {
                println!("task {}: {message}", task.task.status.as_str());
            }
        })
        .elicitation(|_info, params| async move {
            println!("server asks: {}", params.message());
            Ok(ElicitResult::accept(BTreeMap::from([(
                "deploy".to_owned(),
                ElicitValue::Bool(true),
            )])))
        })
        .connect_http(&url)
        .await?;
    let result = client
        .call_tool("run_build", json!({"project": "orders"}))
        .await?;
    println!("{}", cli::text(&result));
    client.close().await;
    Ok(())
}
