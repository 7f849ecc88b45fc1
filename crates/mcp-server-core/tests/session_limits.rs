//! What one session may make the engine hold, and the refusal past each limit: resource
//! subscriptions (capped, recorded only once accepted, filtered per URI), requests sharing an
//! id, the log level a legacy session starts at, paging with a huge page size.

mod common;

use std::time::Duration;

use common::TestClient;
use mcp_server_core::registry::{McpServer, ToolDef};
use mcp_server_core::{Server, SessionLimits, TransportContext};
use mcp_types::logging::LoggingLevel;
use mcp_types::mrtr::Outcome;
use mcp_types::tools::CallToolResult;
use mcp_types::{ErrorObject, JsonObject};
use serde_json::json;

fn limited(max_subscriptions: usize) -> mcp_server_core::Service {
    let mut limits = SessionLimits::default();
    limits.max_subscriptions = max_subscriptions;
    Server::new("Limited")
        .logging(true)
        .change_notifications(true)
        .session_limits(limits)
        .resource_update_filter(|_principal, uri| !uri.starts_with("file:///tenant-b/"))
        .on_subscribe(|_ctx, p| async move {
            if p.uri.starts_with("file:///secret") {
                Err(ErrorObject::invalid_params("not yours"))
            } else {
                Ok(())
            }
        })
        .on_read_resource(|_ctx, p| async move {
            Err(mcp_server_core::resource_not_found(
                mcp_types::version::Era::Legacy,
                &p.uri,
            ))
        })
        .on_call_tool(|ctx, params| async move {
            match params.name.as_str() {
                "log" => {
                    ctx.log(LoggingLevel::Debug, None, json!("internals")).await;
                    ctx.log(LoggingLevel::Info, None, json!("info")).await;
                }
                "change" => {
                    ctx.notifier().resource_updated("file:///tenant-b/x");
                    ctx.notifier().resource_updated("file:///a");
                }
                _ => ctx.cancellation().cancelled().await,
            }
            Ok(Outcome::Complete(CallToolResult::text("done")))
        })
        .into_service()
}

#[tokio::test]
async fn subscriptions_are_capped_and_a_refused_one_takes_no_slot() {
    let mut c = TestClient::new(&limited(2));
    c.initialize("2025-11-25", json!({})).await;
    let subscribe = |uri: &str| json!({"uri": uri});
    let refused = c
        .request("resources/subscribe", subscribe("file:///secret"))
        .await;
    assert_eq!(refused["error"]["message"], "not yours");
    for uri in ["file:///a", "file:///", "file:///a"] {
        let ok = c.request("resources/subscribe", subscribe(uri)).await;
        assert_eq!(ok["result"], json!({}), "{uri}: {ok}");
    }
    let full = c
        .request("resources/subscribe", subscribe("file:///c"))
        .await;
    assert_eq!(
        full["error"],
        json!({"code": -32602, "message": "A session holds at most 2 resource subscriptions"})
    );
    let long = format!("file:///{}", "x".repeat(3000));
    let too_long = c.request("resources/subscribe", subscribe(&long)).await;
    assert_eq!(
        too_long["error"],
        json!({"code": -32602, "message": "a subscribed URI is at most 2048 bytes"})
    );
    // `file:///` covers both updates; the filter keeps tenant b's to itself.
    c.exchange("tools/call", json!({"name": "change"})).await;
    let update = tokio::time::timeout(Duration::from_secs(5), c.conn.recv())
        .await
        .unwrap()
        .unwrap()
        .to_value();
    assert_eq!(update["params"]["uri"], "file:///a");
    assert!(
        tokio::time::timeout(Duration::from_millis(100), c.conn.recv())
            .await
            .is_err(),
        "a filtered update was delivered"
    );
}

#[tokio::test]
async fn a_second_request_with_an_id_in_flight_is_refused() {
    let service = limited(10);
    let (session, _unsolicited) = service.connect(TransportContext::default());
    // A 2026-07-28 call, so `hold` really runs and waits (without the envelope the first call
    // would be answered at once and no longer be in flight).
    let call = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hold","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let first = session.handle_bytes(call).unwrap();
    let second = session.handle_bytes(call).unwrap().collect().await;
    assert_eq!(second.len(), 1);
    assert_eq!(
        second[0].to_value(),
        json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32600,
            "message": "a request with id 5 is already in flight on this session"}})
    );
    // Cancelling id 5 reaches the first request, which is still the tracked one.
    session.handle_bytes(
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}"#,
    );
    assert!(
        first.collect().await.is_empty(),
        "a cancelled request sends nothing"
    );
}

#[tokio::test]
async fn a_legacy_session_gets_no_debug_logs_until_it_asks() {
    let mut c = TestClient::new(&limited(10));
    c.initialize("2025-11-25", json!({})).await;
    let messages = c.exchange("tools/call", json!({"name": "log"})).await;
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0]["params"]["data"], "info");
    c.request("logging/setLevel", json!({"level": "debug"}))
        .await;
    let messages = c.exchange("tools/call", json!({"name": "log"})).await;
    assert_eq!(messages.len(), 3, "{messages:?}");
}

#[tokio::test]
async fn a_huge_page_size_lists_everything_without_overflow() {
    let service = McpServer::new("Paged")
        .page_size(usize::MAX)
        .tool(ToolDef::new("a").handler(|_c, _a: JsonObject| async { "a" }))
        .tool(ToolDef::new("b").handler(|_c, _a: JsonObject| async { "b" }))
        .into_service()
        .unwrap();
    let mut c = TestClient::new(&service);
    let listed = c.modern("tools/list", json!({}), json!({})).await;
    assert_eq!(
        listed["result"]["tools"].as_array().map(Vec::len),
        Some(2),
        "{listed}"
    );
    let second = c
        .modern("tools/list", json!({"cursor": "1"}), json!({}))
        .await;
    assert_eq!(second["result"]["tools"][0]["name"], "b", "{second}");
}
