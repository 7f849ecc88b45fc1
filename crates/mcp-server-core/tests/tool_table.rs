//! One table holds each tool's facts (issue #50): the handler an `McpServer` registered, the
//! layers added to the tool on the low-level server after the build, and a low-level
//! `on_call_tool` that replaces the registered handlers. Each is checked on the wire.

mod common;

use std::sync::{Arc, Mutex};

use common::TestClient;
use mcp_server_core::policy::{Call, Layer, Next, Reply};
use mcp_server_core::registry::{McpServer, ToolDef};
use mcp_server_core::{BoxFuture, Server};
use mcp_types::JsonObject;
use mcp_types::mrtr::Outcome;
use mcp_types::tools::CallToolResult;
use serde_json::json;

fn built() -> Server {
    McpServer::new("table")
        .tool(
            ToolDef::new("echo").handler(|_ctx, _a: JsonObject| async { "registered".to_owned() }),
        )
        .tool(ToolDef::new("other").handler(|_ctx, _a: JsonObject| async { "other".to_owned() }))
        .build()
        .expect("the server builds")
}

async fn text_of(c: &mut TestClient, tool: &str) -> serde_json::Value {
    let r = c
        .modern(
            "tools/call",
            json!({"name": tool, "arguments": {}}),
            json!({}),
        )
        .await;
    r.get("result")
        .map(|res| res["content"][0]["text"].clone())
        .unwrap_or_else(|| r["error"].clone())
}

#[tokio::test]
async fn a_registered_tool_is_answered_by_its_own_handler_and_an_unknown_one_is_refused() {
    let mut c = TestClient::new(&built().into_service());
    assert_eq!(text_of(&mut c, "echo").await, "registered");
    assert_eq!(text_of(&mut c, "other").await, "other");
    assert_eq!(
        text_of(&mut c, "nope").await,
        json!({"code": -32602, "message": "Unknown tool: nope"})
    );
}

#[tokio::test]
async fn a_low_level_call_handler_set_after_the_build_answers_every_tool() {
    let server = built().on_call_tool(|_ctx, p| async move {
        Ok(Outcome::Complete(CallToolResult::text(format!(
            "low-level {}",
            p.name
        ))))
    });
    let mut c = TestClient::new(&server.into_service());
    assert_eq!(text_of(&mut c, "echo").await, "low-level echo");
    assert_eq!(text_of(&mut c, "nope").await, "low-level nope");
}

struct Mark(&'static str, Arc<Mutex<Vec<String>>>);

impl Layer for Mark {
    fn call<'a>(&'a self, call: &'a Call<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        self.1
            .lock()
            .unwrap()
            .push(format!("{} {}", self.0, call.target().unwrap_or("-")));
        next.run()
    }
}

#[tokio::test]
async fn a_tool_layer_added_after_the_build_wraps_that_tool_only() {
    let seen: Arc<Mutex<Vec<String>>> = Default::default();
    let server = built().tool_layer("echo", Mark("echo layer", seen.clone()));
    let mut c = TestClient::new(&server.into_service());
    assert_eq!(text_of(&mut c, "echo").await, "registered");
    assert_eq!(text_of(&mut c, "other").await, "other");
    assert_eq!(*seen.lock().unwrap(), ["echo layer echo"]);
}

/// A tool said never to ask (no resolvers, a body whose type cannot return a round) gets no
/// binding copied for its call. If it returns a round with a state anyway (here forced with
/// the macros' hidden switch), the state is refused, never sent unsealed.
#[tokio::test]
async fn a_round_from_a_tool_said_never_to_ask_is_refused_not_sent_unsealed() {
    use mcp_types::mrtr::InputRequiredResult;
    let tool = |name: &str, never: bool| {
        let def = ToolDef::new(name).handler(|_ctx, _a: JsonObject| async {
            Outcome::<CallToolResult>::InputRequired(InputRequiredResult::state_only("plain"))
        });
        if never { def.__hand_built(false) } else { def }
    };
    let server = McpServer::new("table")
        .tool(tool("liar", true))
        .tool(tool("asker", false))
        .build()
        .expect("the server builds");
    let mut c = TestClient::new(&server.into_service());
    let r = c
        .modern(
            "tools/call",
            json!({"name": "liar", "arguments": {}}),
            json!({}),
        )
        .await;
    assert_eq!(
        r["error"],
        json!({"code": -32603, "message": "Handler returned an invalid result"})
    );
    assert!(!r.to_string().contains("plain"), "{r}");
    // The same body, declared as one that may ask, has its state sealed.
    let r = c
        .modern(
            "tools/call",
            json!({"name": "asker", "arguments": {}}),
            json!({}),
        )
        .await;
    let state = r["result"]["requestState"]
        .as_str()
        .expect("a sealed state");
    assert_ne!(state, "plain");
    assert_eq!(r["result"]["resultType"], "input_required");
}
