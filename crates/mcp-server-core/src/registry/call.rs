//! A call of a registered tool: its arguments read into the tool's type, its resolved
//! parameters prepared (or a question asked), its body run, in a task when the call asked
//! for one.

use std::future::ready;
use std::sync::Arc;

use mcp_types::BoxFuture;
use mcp_types::ErrorObject;
use mcp_types::mrtr::Outcome;
use mcp_types::tools::{CallToolRequestParams, CallToolResult};

use super::resolve::{Step, prepare};
use super::{Context, Registry};

impl Registry {
    /// A call of the tool at `index`: its arguments read here; the one future made resolves
    /// its parameters and runs its body (an `async fn` would hold the context twice).
    pub(super) fn call_tool(
        self: Arc<Self>,
        index: usize,
        ctx: Context,
        params: CallToolRequestParams,
    ) -> BoxFuture<'static, Result<Outcome<CallToolResult>, ErrorObject>> {
        let tool = &self.tools[index];
        let name = &tool.def.tool.name;
        let mut arguments = params.arguments.unwrap_or_default();
        // A value the client sends for a resolved parameter is ignored.
        for p in &tool.def.params {
            arguments.remove(&p.param);
        }
        let (Some(parse), Some(body)) = (&tool.def.parse, &tool.def.body) else {
            let missing = ErrorObject::internal(format!("tool '{name}' has no handler"));
            return Box::pin(ready(Err(missing)));
        };
        // Arguments that do not fit the tool's schema are an input-validation failure, which the
        // spec reports as a tool result with `isError` (the model can read it and retry), not as
        // a protocol error; `-32602` is for an unknown tool or params of the wrong shape.
        let args = match parse(&arguments) {
            Ok(args) => args,
            Err(e) => {
                let message = format!("Invalid arguments for tool '{name}': {e}");
                return Box::pin(ready(Ok(Outcome::Complete(CallToolResult::error(message)))));
            }
        };
        let body = body.clone();
        Box::pin(async move {
            let tool = &self.tools[index];
            let name = &tool.def.tool.name;
            let arguments = Arc::new(arguments);
            match prepare(&tool.graph, &tool.def.params, &ctx, arguments.clone()).await? {
                Step::Ask(round) => Ok(Outcome::InputRequired(round)),
                Step::Fail(message) => Ok(Outcome::Complete(CallToolResult::error(format!(
                    "Error executing tool {name}: {message}"
                )))),
                Step::Body(resolved) if ctx.may_run_as_task() => {
                    let replay = self.replay_for(tool, &ctx, &arguments);
                    let name = name.clone();
                    Box::pin(ctx.run_as_task_replayable(replay, move |ctx| async move {
                        Self::task_result(&name, body(ctx, args, resolved).await?)
                    }))
                    .await
                }
                Step::Body(resolved) => {
                    let outcome = body(ctx, args, resolved).await?;
                    if matches!(outcome, Outcome::InputRequired(_)) && !tool.graph.order.is_empty()
                    {
                        return Err(ErrorObject::internal(format!(
                            "tool '{name}' returned an InputRequiredResult while using resolvers"
                        )));
                    }
                    Ok(outcome)
                }
            }
        })
    }
}
