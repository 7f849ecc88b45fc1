//! The gateway's `tools/call`: find the upstream a qualified name routes to, call its tool
//! under its own name, and pass the result on; a failure of the upstream becomes a tool error
//! naming it, and costs no other upstream anything.

use std::sync::Arc;

use mcp_client::ClientError;
use mcp_server_core::{HandlerResult, RequestContext};
use mcp_types::ErrorObject;
use mcp_types::mrtr::{Outcome, OutcomeError};
use mcp_types::tools::{CallToolRequestParams, CallToolResult};

use crate::catalog::Route;
use crate::failure::UpstreamFailure;
use crate::shared::Shared;

/// Answers one `tools/call`.
pub(crate) async fn call(
    shared: Arc<Shared>,
    ctx: RequestContext,
    params: CallToolRequestParams,
) -> HandlerResult<Outcome<CallToolResult>> {
    let route = match route(&shared, &params.name).await {
        Ok(route) => route,
        Err(answer) => return (*answer).map(Outcome::Complete),
    };
    let mount = &shared.mounts[route.upstream];
    let answer = mount.call(&ctx, &route.name, params.arguments).await;
    let failure = match answer {
        Ok(raw) => match Outcome::<CallToolResult>::from_raw(&raw) {
            Ok(Outcome::Complete(result)) => return Ok(Outcome::Complete(result)),
            Ok(Outcome::InputRequired(_)) => {
                UpstreamFailure::NotPassedThrough("asked for input (an InputRequiredResult)".into())
            }
            Err(OutcomeError::UnrecognizedResultType(kind)) => {
                UpstreamFailure::Client(ClientError::UnrecognizedResultType(kind))
            }
            Err(OutcomeError::Malformed(e)) => UpstreamFailure::Client(
                ClientError::InvalidResponse(format!("'tools/call' result: {e}")),
            ),
        },
        Err(failure) => failure,
    };
    if failure.is_connection_lost() {
        tracing::warn!(upstream = mount.ns.label(), why = %crate::shared::describe(&failure), "an upstream's connection was lost; its tools are left out until it answers again");
        shared.lost(route.upstream);
    }
    failure.answer(&mount.ns).map(Outcome::Complete)
}

/// Where `name` goes. A name no listed tool has, but under the prefix of a mount whose tools
/// are missing, asks that mount for its tools once more first; when it still does not
/// answer, the answer is a tool error naming it. Otherwise `-32602 Unknown tool: NAME`.
async fn route(shared: &Shared, name: &str) -> Result<Route, Box<HandlerResult<CallToolResult>>> {
    let catalog = shared.catalog();
    if let Some(route) = catalog.routes.get(name) {
        return Ok(route.clone());
    }
    let due: Vec<usize> = catalog
        .missing
        .iter()
        .copied()
        .filter(|&i| shared.mounts[i].ns.strip(name).is_some())
        .collect();
    let unknown = || {
        Err(Box::new(Err(ErrorObject::invalid_params(format!(
            "Unknown tool: {name}"
        )))))
    };
    if due.is_empty() {
        return unknown();
    }
    let failures = shared.refresh(&due).await;
    if let Some(route) = shared.catalog().routes.get(name) {
        return Ok(route.clone());
    }
    match failures.first() {
        Some((i, failure)) => {
            let why = match failure {
                UpstreamFailure::Unavailable(why) => why.clone(),
                other => crate::shared::describe(other),
            };
            Err(Box::new(
                UpstreamFailure::Unavailable(why).answer(&shared.mounts[*i].ns),
            ))
        }
        None => unknown(),
    }
}
