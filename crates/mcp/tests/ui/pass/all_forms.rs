// Every form the macros accept, registered on one server.
use mcp::types::tools::CallToolResult;
use mcp::types::InputRequiredResult;
use mcp::types::roots::ListRootsResult;
use mcp::types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use mcp::{Context, ElicitationResult, Json, McpServer, Outcome, Ready, Resolution, ToolOutcome};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

#[derive(Serialize, JsonSchema)]
struct Total {
    total: u64,
}

#[mcp::resolver]
async fn region(ctx: &Context) -> Resolution<String> {
    let _ = ctx.era();
    Resolution::ready("eu-west-1".to_owned())
}

#[mcp::resolver(name = "confirm")]
async fn confirm_it(path: &str, #[resolve(region)] region: Ready<String>) -> Resolution<Confirm> {
    Resolution::elicit(format!("{path} in {}?", region.0))
}

#[mcp::resolver]
async fn unlock(item: String) -> Resolution<Confirm> {
    Resolution::elicit(format!("Unlock {item}?"))
}

#[mcp::resolver]
async fn plan() -> Resolution<CreateMessageResult> {
    Resolution::sample(CreateMessageRequestParams::new(vec![], 10))
}

#[mcp::resolver]
async fn roots() -> Resolution<ListRootsResult> {
    Resolution::list_roots()
}

/// Every parameter kind.
#[mcp::tool(title = "Everything", read_only, destructive = false, idempotent, open_world = false, icon = "https://example.com/i.png")]
async fn everything(
    /// A path.
    path: String,
    #[mcp(default = 3)] count: u32,
    maybe: Option<bool>,
    #[mcp(header = "Region")] zone: String,
    #[resolve(confirm_it)] confirm: ElicitationResult<Confirm>,
    #[resolve(confirm_it)] plain: Confirm,
    #[resolve(plan)] planned: CreateMessageResult,
    #[resolve(roots)] listed: ListRootsResult,
    #[resolve(region)] where_: Ready<String>,
    ctx: Context,
) -> Result<String, String> {
    let _ = (count, maybe, zone, confirm, plain.ok, planned.model, listed.roots, where_.0, ctx.era());
    Ok(path)
}

/// Structured output.
#[mcp::tool(output = Total)]
async fn sum(a: u64, b: u64) -> Json<Total> {
    Json(Total { total: a + b })
}

/// A hand-built round.
#[mcp::tool]
async fn poll(ctx: &Context) -> ToolOutcome {
    match ctx.request_state() {
        Some(_) => Outcome::Complete(CallToolResult::text("done")),
        None => Outcome::InputRequired(InputRequiredResult::state_only("wait")),
    }
}

/// No arguments at all.
#[mcp::tool]
async fn ping() -> &'static str {
    "pong"
}

/// A prompt.
#[mcp::prompt(title = "Greeting")]
async fn greet(who: String, mood: Option<String>, #[resolve(region)] region: Ready<String>, ctx: &Context) -> String {
    let _ = (mood, ctx.era());
    format!("Hello {who} from {}", region.0)
}

/// A static resource.
#[mcp::resource("file:///readme", mime_type = "text/plain")]
async fn readme(ctx: &Context) -> String {
    let _ = ctx.era();
    "read me".into()
}

/// A template that asks.
#[mcp::resource("vault://{item}/{+rest}", name = "vault")]
async fn vault(item: String, rest: String, #[resolve(unlock)] confirm: Confirm) -> Result<String, String> {
    let _ = confirm.ok;
    Ok(format!("{item}/{rest}"))
}

fn main() {
    let _service = McpServer::new("forms")
        .tool(everything)
        .tool(sum)
        .tool(poll)
        .tool(ping)
        .prompt(greet)
        .resource(readme)
        .resource(vault)
        .into_service();
}
