//! The registry's side of tasks that outlive their worker (`tasks/rerun.rs`): which tools'
//! tasks keep a replay, and how a replay becomes the tool's body again.

use std::sync::Arc;

use mcp_types::mrtr::Outcome;
use mcp_types::tools::CallToolResult;
use mcp_types::{ErrorObject, JsonObject};

use super::resolve::{Step, prepare};
use super::{BuiltTool, Context, Registry};

/// The client's capabilities as a re-run reads them (what it may ask, which extensions it
/// declared), without what a client may pad them with: `experimental`, unknown members, the
/// extensions' settings (security review X1).
fn needed_capabilities(
    declared: &mcp_types::capabilities::ClientCapabilities,
) -> mcp_types::capabilities::ClientCapabilities {
    mcp_types::capabilities::ClientCapabilities {
        roots: declared.roots.clone(),
        sampling: declared.sampling.clone(),
        elicitation: declared.elicitation.clone(),
        tasks: declared.tasks.as_ref().map(|_| JsonObject::new()),
        extensions: declared
            .extensions
            .as_ref()
            .map(|e| e.keys().map(|id| (id.clone(), JsonObject::new())).collect()),
        ..Default::default()
    }
}

impl BuiltTool {
    /// The arguments a re-run needs: those the tool's input schema declares (none when it
    /// declares none), unless the schema takes any (`additionalProperties` other than false:
    /// a `JsonObject` tool), and then every argument. A client's extra keys are not kept for
    /// the task's life (security review X1); the replay's byte cap bounds the rest.
    fn declared_arguments(&self, arguments: &JsonObject) -> JsonObject {
        let schema = &self.def.tool.input_schema;
        let open = schema
            .get("additionalProperties")
            .is_some_and(|a| a != &serde_json::Value::Bool(false));
        if open {
            return arguments.clone();
        }
        let declared = schema
            .get("properties")
            .and_then(serde_json::Value::as_object);
        arguments
            .iter()
            .filter(|(name, _)| declared.is_some_and(|d| d.contains_key(*name)))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect()
    }

    /// Whether the tool says it is safe to run again (`idempotentHint`).
    fn reruns(&self) -> bool {
        self.def
            .tool
            .annotations
            .as_ref()
            .and_then(|a| a.idempotent_hint)
            == Some(true)
    }
}

impl Registry {
    /// A task body's outcome as the task's result.
    pub(super) fn task_result(
        name: &str,
        outcome: Outcome<CallToolResult>,
    ) -> Result<CallToolResult, ErrorObject> {
        match outcome {
            Outcome::Complete(result) => Ok(result),
            Outcome::InputRequired(_) => Err(ErrorObject::internal(format!(
                "tool '{name}' returned an InputRequiredResult from a task; a task asks with ctx.elicit() and friends"
            ))),
        }
    }

    /// What a task of `tool` keeps to run again, when it may: a call that becomes a task, of
    /// a tool that says it is safe to run again and needs no resolver (their answers are not
    /// kept).
    pub(super) fn replay_for(
        &self,
        tool: &BuiltTool,
        ctx: &Context,
        arguments: &JsonObject,
    ) -> Option<crate::tasks::Replay> {
        (ctx.may_run_as_task() && tool.graph.order.is_empty() && tool.reruns()).then(|| {
            crate::tasks::Replay {
                tool: tool.def.tool.name.clone(),
                arguments: tool.declared_arguments(arguments),
                protocol_version: ctx.protocol_version.clone().into_owned(),
                capabilities: needed_capabilities(&ctx.client_capabilities),
                principal: ctx
                    .principal
                    .as_ref()
                    .map(crate::fleet::StoredPrincipal::from),
                answered: Default::default(),
                asked: Default::default(),
                runs: 1,
            }
        })
    }

    /// The body of a task of the tool at `index` run again after its worker was lost (see
    /// [`crate::tasks::MAX_TASK_RUNS`]).
    pub(super) fn rerun(
        self: Arc<Self>,
        index: usize,
        ctx: Context,
        arguments: JsonObject,
    ) -> crate::BoxFuture<'static, crate::HandlerResult<CallToolResult>> {
        Box::pin(async move {
            let tool = &self.tools[index];
            let name = &tool.def.tool.name;
            // Only a tool that says it is safe to run again runs again, whatever a replay in
            // the store names (security review X10).
            if !tool.reruns() {
                return Err(ErrorObject::internal(format!(
                    "tool '{name}' is not idempotent: its task does not run again"
                )));
            }
            let (Some(parse), Some(body)) = (&tool.def.parse, &tool.def.body) else {
                return Err(ErrorObject::internal(format!(
                    "tool '{name}' has no handler"
                )));
            };
            let args = parse(&arguments).map_err(|e| {
                ErrorObject::internal(format!("tool '{name}' no longer takes its arguments: {e}"))
            })?;
            match prepare(&tool.graph, &tool.def.params, &ctx, Arc::new(arguments)).await? {
                Step::Body(resolved) => Self::task_result(name, body(ctx, args, resolved).await?),
                _ => Err(ErrorObject::internal(format!(
                    "tool '{name}' cannot run again: it asks through resolvers"
                ))),
            }
        })
    }
}
