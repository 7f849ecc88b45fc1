//! `subscriptions/listen` (2026-07-28): acknowledgement first, then only the opted-in change
//! notifications, each tagged with the listen request's id; shutdown ends it with its result.

mod common;

use std::time::Duration;

use common::{TestClient, with_meta};
use mcp_server_core::Server;
use mcp_types::mrtr::Outcome;
use mcp_types::tools::CallToolResult;
use serde_json::{Value, json};

fn service() -> mcp_server_core::Service {
    Server::new("watch")
        .change_notifications(true)
        .on_call_tool(|ctx, p| async move {
            match p.name.as_str() {
                "test_trigger_tool_change" => ctx.notifier().tools_list_changed(),
                "test_trigger_prompt_change" => ctx.notifier().prompts_list_changed(),
                _ => ctx.notifier().resource_updated("file:///cfg.json/part"),
            }
            Ok(Outcome::Complete(CallToolResult::text("ok")))
        })
        .on_list_resources(|_c, _p| async { Ok(Default::default()) })
        .into_service()
}

async fn next(c: &mut TestClient) -> Value {
    tokio::time::timeout(Duration::from_secs(2), c.conn.recv())
        .await
        .expect("no message")
        .unwrap()
        .to_value()
}

#[tokio::test]
async fn listen_acknowledges_then_delivers_tagged_opted_in_notifications_only() {
    let service = service();
    let mut listener = TestClient::new(&service);
    let listen = json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": with_meta(json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true, "resourceSubscriptions": ["file:///cfg.json"]}}), json!({}))});
    listener.conn.send_raw(listen.to_string().into_bytes());
    let ack = next(&mut listener).await;
    // prompts are not served, so that part of the filter is not honoured.
    assert_eq!(
        ack,
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
        "notifications": {"toolsListChanged": true, "resourceSubscriptions": ["file:///cfg.json"]},
        "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}}})
    );

    let mut caller = TestClient::new(&service);
    for tool in [
        "test_trigger_prompt_change",
        "test_trigger_tool_change",
        "update",
    ] {
        caller
            .modern("tools/call", json!({"name": tool}), json!({}))
            .await;
    }
    assert_eq!(
        next(&mut listener).await,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}}})
    );
    assert_eq!(
        next(&mut listener).await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
        "params": {"uri": "file:///cfg.json/part", "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}}})
    );

    service.shutdown();
    let end = next(&mut listener).await;
    assert_eq!(end["id"], "listen-1");
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
}

#[tokio::test]
async fn a_cancelled_listen_sends_nothing_more() {
    let service = service();
    let mut listener = TestClient::new(&service);
    let listen = json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen",
        "params": with_meta(json!({"notifications": {"toolsListChanged": true}}), json!({}))});
    listener.conn.send_raw(listen.to_string().into_bytes());
    let ack = next(&mut listener).await;
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 9,
        "the id keeps its JSON type"
    );
    listener.notify("notifications/cancelled", json!({"requestId": 9}));
    tokio::time::sleep(Duration::from_millis(20)).await;
    service.notifier().tools_list_changed();
    service.shutdown();
    assert!(
        tokio::time::timeout(Duration::from_millis(100), listener.conn.recv())
            .await
            .is_err()
    );
}
