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
