//! Builds: a long-running tool as a task (the Tasks extension, `io.modelcontextprotocol/tasks`).
//!
//! `run_build` compiles and tests a project (a few short sleeps stand in for the work), then
//! asks the user whether to deploy, halfway through, from inside the task. A 2026-07-28
//! client that declares the extension gets a `CreateTaskResult` at once and follows the task
//! with `tasks/get`; the question arrives as the task's `inputRequests` and the answer goes back
//! with `tasks/update`. A 2025-11-25 session gets the same body inline, the question asked as
//! a live `elicitation/create`. A 2026-07-28 client without the extension is refused with the
//! server's error: the body asks from the middle of its run (`ctx.elicit()`), which needs a
//! task or a live back-channel, and a stateless call has neither.

use std::time::Duration;

use mcp::tasks::{TaskConfig, TaskSupport};
use mcp::{Context, ElicitationResult, McpServer, ToolDef, ToolReply};
use schemars::JsonSchema;
use serde::Deserialize;

/// The arguments of `run_build`.
#[derive(Deserialize, JsonSchema)]
pub struct Build {
    /// The project to build.
    pub project: String,
}

/// The question asked halfway.
#[derive(Clone, Deserialize, JsonSchema)]
pub struct Deploy {
    /// Deploy the build now.
    pub deploy: bool,
}

/// One step of the build, unless the task was cancelled.
async fn step(ctx: &Context, done: f64, message: &str) -> bool {
    ctx.progress(done, Some(4.0), Some(message)).await;
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(150)) => true,
        () = ctx.cancellation().cancelled() => false,
    }
}

/// The `run_build` tool.
pub fn run_build() -> ToolDef {
    ToolDef::new("run_build")
        .description("Build and test a project, then deploy it if the user confirms.")
        .arguments::<Build>()
        .task(TaskSupport::Optional)
        .handler(|ctx: Context, build: Build| async move {
            let project = build.project;
            for (done, message) in [(1.0, "compiling"), (2.0, "running the tests")] {
                if !step(&ctx, done, &format!("{project}: {message}")).await {
                    return ToolReply::Result(mcp::types::tools::CallToolResult::text(format!(
                        "{project}: build stopped"
                    )));
                }
            }
            let question = format!("{project} built and passed its tests. Deploy it now?");
            let deploy = match ctx.elicit::<Deploy>(question).await {
                Ok(ElicitationResult::Accepted(Deploy { deploy })) => deploy,
                Ok(_) => false,
                Err(e) => return ToolReply::Error(e),
            };
            if !deploy {
                return ToolReply::Result(mcp::types::tools::CallToolResult::text(format!(
                    "{project} built; not deployed."
                )));
            }
            step(&ctx, 3.0, &format!("{project}: deploying")).await;
            ToolReply::Result(mcp::types::tools::CallToolResult::text(format!(
                "{project} built and deployed."
            )))
        })
}

/// The Builds server: `run_build`, with tasks polled every 100 ms; a 2026-07-28 client may
/// listen for changes (`subscriptions/listen`).
pub fn server() -> McpServer {
    McpServer::new("builds")
        .version(env!("CARGO_PKG_VERSION"))
        .tool(run_build())
        .tasks(TaskConfig::new().poll_interval(Duration::from_millis(100)))
        .change_notifications(true)
}
