use mcp::{Context, ElicitationResult, McpServer, Resolution, State};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Default)]
struct Store;

#[derive(Clone, Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

#[mcp::resolver]
async fn confirm(store: State<Store>, ctx: &Context) -> Resolution<Confirm> {
    let _ = (store, ctx);
    Resolution::elicit("Sure?")
}

#[mcp::tool]
async fn act(
    target: String,
    store: mcp::State<Store>,
    #[resolve(confirm)] ok: ElicitationResult<Confirm>,
) -> String {
    let _ = (store, ok);
    target
}

#[mcp::resource("store://all")]
async fn all(store: State<Store>) -> String {
    let _ = store;
    String::new()
}

struct Methods;

#[mcp::tools]
impl Methods {
    #[tool]
    async fn method(&self, store: State<Store>) -> String {
        let _ = store;
        String::new()
    }
}

fn main() {
    let _ = McpServer::new("s")
        .with_state(Store)
        .tool(act)
        .resource(all)
        .register(Methods)
        .build();
    let direct = act("x".into(), State::new(Store), ElicitationResult::Declined);
    drop(direct);
    let _ = Confirm { ok: true }.ok;
}
