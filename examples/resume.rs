//! Persist a call's `requestState` and finish the call from another process.
//!
//! `resume start URL FILE` makes the first leg and saves the server's questions and state;
//! `resume finish URL FILE` (any process, any time before the state expires) answers them and
//! sends the retry. Without arguments the example starts a Provisioner in-process and runs
//! both legs as two child processes of its own.
//!
//! ```sh
//! cargo run --example resume
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use mcp::ClientBuilderExt;
use mcp::Outcome;
use mcp::client::{CallOptions, Client, Mode};
use mcp::types::capabilities::{ClientCapabilities, ElicitationCapability};
use mcp::types::elicitation::{ElicitResult, ElicitValue};
use mcp::types::mrtr::{InputRequest, InputResponse, InputResponses};
use mcp_examples::{cli, provisioner};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// What the first process leaves for the second.
#[derive(Serialize, Deserialize)]
struct Pending {
    tool: String,
    arguments: Value,
    input_requests: BTreeMap<String, InputRequest>,
    request_state: Option<String>,
}

async fn connect(url: &str) -> Result<Client, Error> {
    Ok(Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .capabilities(ClientCapabilities {
            elicitation: Some(ElicitationCapability::default()),
            ..Default::default()
        })
        .connect_http(url)
        .await?)
}

async fn start(url: &str, file: &Path) -> Result<(), Error> {
    let client = connect(url).await?;
    let arguments = json!({"name": "orders"});
    let outcome = client
        .session()
        .call_tool("provision", arguments.clone(), CallOptions::default())
        .await?;
    let Outcome::InputRequired(round) = outcome else {
        return Err("the server finished without asking anything".into());
    };
    let pending = Pending {
        tool: "provision".into(),
        arguments,
        input_requests: round.input_requests.unwrap_or_default(),
        request_state: round.request_state,
    };
    for request in pending.input_requests.values() {
        if let InputRequest::Elicit(params) = request {
            println!(
                "[start, pid {}] server asks: {}",
                std::process::id(),
                params.message()
            );
        }
    }
    std::fs::write(file, serde_json::to_vec_pretty(&pending)?)?;
    println!(
        "[start, pid {}] saved the state to {}",
        std::process::id(),
        file.display()
    );
    Ok(())
}

async fn finish(url: &str, file: &Path) -> Result<(), Error> {
    let pending: Pending = serde_json::from_slice(&std::fs::read(file)?)?;
    let mut answers = InputResponses::new();
    for (key, request) in &pending.input_requests {
        let InputRequest::Elicit(_) = request else {
            return Err(format!("this client cannot answer a {} request", request.method()).into());
        };
        let region = ElicitValue::String("eu-west-1".into());
        answers.insert(
            key.clone(),
            InputResponse::Elicit(ElicitResult::accept(BTreeMap::from([(
                "region".to_owned(),
                region,
            )]))),
        );
    }
    let client = connect(url).await?;
    let options = CallOptions::resume(Some(answers), pending.request_state);
    match client
        .session()
        .call_tool(&pending.tool, pending.arguments, options)
        .await?
    {
        Outcome::Complete(result) => {
            std::fs::remove_file(file)?;
            println!(
                "[finish, pid {}] {}",
                std::process::id(),
                cli::text(&result)
            );
            Ok(())
        }
        Outcome::InputRequired(_) => Err("the server asked again".into()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [leg, url, file] if leg == "start" => start(url, Path::new(file)).await,
        [leg, url, file] if leg == "finish" => finish(url, Path::new(file)).await,
        [] => {
            let server = provisioner::server(mcp::RequestStateSecurity::ephemeral())?;
            let url = cli::serve_in_background(server).await?;
            let file = std::env::temp_dir().join(format!("mcp-resume-{}.json", std::process::id()));
            let me = std::env::current_exe()?;
            for leg in ["start", "finish"] {
                let status = tokio::process::Command::new(&me)
                    .args([leg, &url, &file.display().to_string()])
                    .status()
                    .await?;
                if !status.success() {
                    return Err(format!("the {leg} leg failed: {status}").into());
                }
            }
            Ok(())
        }
        _ => Err("usage: resume [start URL FILE | finish URL FILE]".into()),
    }
}
