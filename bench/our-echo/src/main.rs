//! The benchmark's echo server on this SDK.
//!
//!     our-echo --http PORT     Streamable HTTP at http://127.0.0.1:PORT/mcp
//!     our-echo --stdio         newline-delimited JSON-RPC on stdin/stdout
//!
//! Tools: `echo(text) -> text`, and `confirm_echo(text)`, which asks the client to confirm
//! (one elicitation round through a resolver: call → input_required → retry → result) and then
//! echoes; `progress_echo(text)`, which reports progress once before it answers (so a client
//! that accepts SSE gets a streamed response: a progress event, then the result).

use mcp::{Context, ElicitationResult, McpServer, Resolution};
use schemars::JsonSchema;
use serde::Deserialize;

/// Echo the text back.
#[mcp::tool]
async fn echo(text: String) -> String {
    text
}

/// The answer to the confirmation question.
#[derive(Clone, Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

/// Always asks: the benchmark measures one full round.
#[mcp::resolver]
async fn confirm(text: &str) -> Resolution<Confirm> {
    Resolution::elicit(format!("Echo {} character(s)?", text.len()))
}

/// Echo the text back after the client confirms.
#[mcp::tool]
async fn confirm_echo(
    text: String,
    #[resolve(confirm)] answer: ElicitationResult<Confirm>,
) -> String {
    match answer {
        ElicitationResult::Accepted(Confirm { ok: true }) => text,
        _ => String::new(),
    }
}

/// Echo the text back after one progress notification.
#[mcp::tool]
async fn progress_echo(text: String, ctx: &Context) -> String {
    ctx.progress(1.0, Some(1.0), None).await;
    text
}

fn server() -> McpServer {
    McpServer::new("our-echo")
        .tool(echo)
        .tool(confirm_echo)
        .tool(progress_echo)
}

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["--http", port] => {
            let port: u16 = port.parse()?;
            mcp::http::serve(server(), ("127.0.0.1", port)).await
        }
        ["--stdio"] | [] => mcp::stdio::serve(server()).await,
        _ => Err("usage: our-echo [--stdio | --http PORT]".into()),
    }
}
