//! The benchmark's echo server on this SDK.
//!
//!     our-echo --http PORT     Streamable HTTP at http://127.0.0.1:PORT/mcp
//!     our-echo --http-wide PORT  the same, with room for 12,000 connections and sessions
//!     our-echo --stdio         newline-delimited JSON-RPC on stdin/stdout
//!     our-echo --http-scale PORT [TOOLS]  the scaling runs (`loadgen scale`): room for 110,000
//!                              sessions, 15,000 connections, 12,000 listen streams and
//!                              1,100,000 tasks in memory, all from one client; TOOLS more
//!                              echo tools (`echo_0`, …)
//!     our-echo --http-scale-redis PORT URL  the same caps, tasks kept in the Redis at URL
//!                              (only as our-echo-redis, built with the `redis` feature)
//! `task_done(text)` is a task that completes at once: what a task costs while it is kept.
//!
//! Tools: `echo(text) -> text`, and `confirm_echo(text)`, which asks the client to confirm
//! (one elicitation round through a resolver: call → input_required → retry → result) and then
//! echoes; `progress_echo(text)`, which reports progress once before it answers (so a client
//! that accepts SSE gets a streamed response: a progress event, then the result);
//! `task_echo(text)`, a task (the Tasks extension) that asks the client to confirm from inside
//! its body and then echoes: create → `tasks/get` → `input_required` → `tasks/update` →
//! `completed`; `task_wait()`, a task that stays `working` until it is cancelled (or for 60 s
//! at most), so `tasks/get` polling can be measured on its own.

use std::time::Duration;

use mcp::tasks::{TaskConfig, TaskSupport};
use mcp::types::tools::CallToolResult;
use mcp::{Context, ElicitationResult, McpServer, Resolution, ToolDef, ToolReply};
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

/// The arguments of `task_echo`.
#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

/// `task_echo`: asks inside the task, then echoes.
fn task_echo() -> ToolDef {
    ToolDef::new("task_echo")
        .description("Echo the text back from a task, after the client confirms.")
        .arguments::<Text>()
        .task(TaskSupport::Required)
        .handler(|ctx: Context, args: Text| async move {
            match ctx
                .elicit::<Confirm>(format!("Echo {} character(s)?", args.text.len()))
                .await
            {
                Ok(ElicitationResult::Accepted(Confirm { ok: true })) => {
                    ToolReply::Result(CallToolResult::text(args.text))
                }
                Ok(_) => ToolReply::Result(CallToolResult::text(String::new())),
                Err(e) => ToolReply::Error(e),
            }
        })
}

/// How long a `task_wait` body waits for its cancellation at most.
const TASK_WAIT_MAX: Duration = Duration::from_secs(60);

/// No arguments.
#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// `task_wait`: a task that stays `working` until `tasks/cancel` (or [`TASK_WAIT_MAX`]).
fn task_wait() -> ToolDef {
    ToolDef::new("task_wait")
        .description("Stay working until cancelled, for 60 s at most.")
        .arguments::<Nothing>()
        .task(TaskSupport::Required)
        .handler(|ctx: Context, _: Nothing| async move {
            tokio::select! {
                () = ctx.cancellation().cancelled() => {}
                () = tokio::time::sleep(TASK_WAIT_MAX) => {}
            }
            ToolReply::Result(CallToolResult::text("waited"))
        })
}

/// `task_done`: a task whose body answers at once; the task is then kept until its TTL.
fn task_done() -> ToolDef {
    ToolDef::new("task_done")
        .description("Echo the text back from a task that completes at once.")
        .arguments::<Text>()
        .task(TaskSupport::Required)
        .handler(|_: Context, args: Text| async move {
            ToolReply::Result(CallToolResult::text(args.text))
        })
}

/// `echo_{n}`: one more echo tool, for a registry of many.
fn numbered_echo(n: usize) -> ToolDef {
    ToolDef::new(format!("echo_{n}"))
        .description(format!("Echo the text back (tool number {n})."))
        .arguments::<Text>()
        .handler(|_: Context, args: Text| async move {
            ToolReply::Result(CallToolResult::text(args.text))
        })
}

fn server() -> McpServer {
    McpServer::new("our-echo")
        .tool(echo)
        .tool(confirm_echo)
        .tool(progress_echo)
        .tool(task_echo())
        .tool(task_wait())
        .tool(task_done())
        // The load generator polls as the server asks; 1 ms keeps a flow from waiting idle.
        .tasks(TaskConfig::new().poll_interval(Duration::from_millis(1)))
}

/// Serves `server` with the scaling runs' caps (see the usage above).
async fn serve_scale(server: McpServer, port: u16) -> Result<(), mcp::ServeError> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    mcp::http::McpHttpService::new(server.into_service()?)
        .max_connections(15_000)
        .max_sessions(110_000)
        .sessions_per_client(110_000)
        .max_listen_streams(12_000)
        .listen_streams_per_client(12_000)
        .serve_with_shutdown(listener, "/mcp", std::future::pending())
        .await?;
    Ok(())
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
        ["--http-wide", port] => {
            // The session memory measurement: 10,000 legacy sessions each holding an SSE
            // stream on its own connection, above the default caps (10,000 sessions, 2,048
            // connections).
            let port: u16 = port.parse()?;
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
            mcp::http::McpHttpService::new(server().into_service()?)
                .max_connections(12_000)
                .max_sessions(12_000)
                // Every session comes from one loopback address: without this the client's
                // share (1,000) would close the oldest as the next ones open.
                .sessions_per_client(12_000)
                .serve_with_shutdown(listener, "/mcp", std::future::pending())
                .await?;
            Ok(())
        }
        #[cfg(feature = "redis")]
        ["--http-scale-redis", port, url] => {
            let port: u16 = port.parse()?;
            let stores = mcp_store_redis::RedisStores::connect(
                mcp_store_redis::RedisConfig::new(*url)
                    .max_tasks(1_100_000)
                    .max_tasks_per_owner(1_100_000),
            )
            .await
            .map_err(|e| format!("redis: {e}"))?;
            let server = server().tasks(
                TaskConfig::new()
                    .poll_interval(Duration::from_millis(1))
                    .store(stores.task_store()),
            );
            serve_scale(server, port).await
        }
        ["--http-scale", port, rest @ ..] => {
            let port: u16 = port.parse()?;
            let tools: usize = match rest {
                [] => 0,
                [n] => n.parse()?,
                _ => return Err("usage: our-echo --http-scale PORT [TOOLS]".into()),
            };
            let store = mcp::tasks::InMemoryTaskStore::new()
                .max_tasks(1_100_000)
                .max_tasks_per_owner(1_100_000);
            let server = (0..tools).fold(server(), |server, n| server.tool(numbered_echo(n)));
            let server = server.tasks(
                TaskConfig::new()
                    .poll_interval(Duration::from_millis(1))
                    .store(store),
            );
            serve_scale(server, port).await
        }
        ["--stdio"] | [] => mcp::stdio::serve(server()).await,
        _ => Err("usage: our-echo [--stdio | --http PORT]".into()),
    }
}
