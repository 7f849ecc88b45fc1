//! The multi-round-trip loop written by hand, one leg at a time: answer what this client can,
//! refuse the rest, and give the whole exchange a wall-clock deadline.
//!
//! ```sh
//! cargo run --example manual_loop                              # starts a Provisioner in-process
//! cargo run --example manual_loop -- http://127.0.0.1:8000/mcp
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use mcp::ClientBuilderExt;
use mcp::Outcome;
use mcp::client::{CallOptions, Client};
use mcp::types::capabilities::{ClientCapabilities, ElicitationCapability};
use mcp::types::elicitation::{ElicitResult, ElicitValue};
use mcp::types::mrtr::{InputRequest, InputResponse, InputResponses};
use mcp::types::tools::CallToolResult;
use mcp_examples::{cli, provisioner};
use serde_json::json;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Answers elicitation requests; refuses every other kind.
fn fulfil(request: &InputRequest) -> Result<InputResponse, String> {
    match request {
        InputRequest::Elicit(params) => {
            println!("server asks: {}", params.message());
            let region = ElicitValue::String("eu-west-1".into());
            Ok(InputResponse::Elicit(ElicitResult::accept(BTreeMap::from(
                [("region".to_owned(), region)],
            ))))
        }
        other => Err(format!(
            "this client cannot answer a {} request",
            other.method()
        )),
    }
}

/// Calls `name` until it completes: the same name and arguments on every leg, the answers
/// under the server's keys, its `requestState` echoed unchanged.
async fn call(
    client: &Client,
    name: &str,
    arguments: serde_json::Value,
) -> Result<CallToolResult, Error> {
    let session = client.session();
    let mut options = CallOptions::default();
    loop {
        match session.call_tool(name, arguments.clone(), options).await? {
            Outcome::Complete(result) => return Ok(result),
            Outcome::InputRequired(round) => {
                let mut answers = InputResponses::new();
                for (key, request) in round.input_requests.unwrap_or_default() {
                    answers.insert(key, fulfil(&request)?);
                }
                println!("retrying with {} answer(s)", answers.len());
                options = CallOptions::resume(Some(answers), round.request_state);
            }
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let url = match std::env::args().nth(1) {
        Some(url) => url,
        None => {
            let server = provisioner::server(mcp::RequestStateSecurity::ephemeral())?;
            cli::serve_in_background(server).await?
        }
    };
    // No callbacks: this loop answers by itself, so it declares what it can answer.
    let client = Client::builder()
        .mode(mcp::client::Mode::Pinned("2026-07-28".into()))
        .capabilities(ClientCapabilities {
            elicitation: Some(ElicitationCapability::default()),
            ..Default::default()
        })
        .connect_http(&url)
        .await?;
    let deadline = Duration::from_secs(30);
    let result = tokio::time::timeout(
        deadline,
        call(&client, "provision", json!({"name": "orders"})),
    )
    .await
    .map_err(|_| format!("no answer within {deadline:?}"))??;
    println!("{}", cli::text(&result));
    Ok(())
}
