//! 2025-11-25 sessions: the `initialize` handshake, `ping`, `logging/setLevel`, resource
//! subscriptions, list-changed notifications, and server-to-client requests in the middle of
//! a call, answered by a fake client.

mod common;

use std::time::Duration;

use common::{TestClient, with_meta};
use mcp_server_core::{PeerError, Server};
use mcp_types::ServerNotification;
use mcp_types::elicitation::{
    ElicitAction, ElicitRequestParams, ElicitRequestUrlParams, ElicitationCompleteParams,
};
use mcp_types::logging::LoggingLevel;
use mcp_types::mrtr::Outcome;
use mcp_types::tools::CallToolResult;
use mcp_types::{ErrorObject, JsonObject};
use serde_json::json;

fn bistro() -> mcp_server_core::Service {
    Server::new("Bistro")
        .version("1.0")
        .logging(true)
        .change_notifications(true)
        .request_timeout(Duration::from_millis(200))
        .on_call_tool(|ctx, params| async move {
            match params.name.as_str() {
                "pay_deposit" => {
                    let ask = ElicitRequestParams::Url(ElicitRequestUrlParams {
                        mode: "url".into(),
                        message: "A 20 EUR deposit confirms your booking.".into(),
                        url: "https://pay.example.com/deposit/b1".into(),
                        elicitation_id: Some("deposit-b1".into()),
                        task: None,
                        meta: None,
                        extra: JsonObject::new(),
                    });
                    let text = match ctx.elicit_with(ask).await {
                        Ok(r) if r.action == ElicitAction::Accept => {
                            "Complete the payment in your browser.".to_owned()
                        }
                        Ok(_) => "No deposit taken. The booking expires in one hour.".to_owned(),
                        Err(e) => return Err(ErrorObject::from(e)),
                    };
                    Ok(Outcome::Complete(CallToolResult::text(text)))
                }
                "confirm_deposit" => {
                    ctx.notify(ServerNotification::ElicitationComplete(
                        ElicitationCompleteParams {
                            elicitation_id: "deposit-b1".into(),
                            extra: JsonObject::new(),
                        },
                    ))
                    .await;
                    Ok(Outcome::Complete(CallToolResult::text(
                        "Deposit received for booking b1.",
                    )))
                }
                "roots" => {
                    let roots = ctx.list_roots().await.map_err(ErrorObject::from)?;
                    Ok(Outcome::Complete(CallToolResult::text(format!(
                        "{} root(s)",
                        roots.roots.len()
                    ))))
                }
                "log" => {
                    ctx.log(LoggingLevel::Info, None, json!("info")).await;
                    ctx.log(LoggingLevel::Error, None, json!("error")).await;
                    Ok(Outcome::Complete(CallToolResult::text("logged")))
                }
                "change" => {
                    ctx.notifier().tools_list_changed();
                    ctx.notifier().resource_updated("file:///cfg.json");
                    ctx.notifier().resource_updated("file:///other.json");
                    Ok(Outcome::Complete(CallToolResult::text("changed")))
                }
                other => Err(ErrorObject::invalid_params(format!(
                    "Unknown tool: {other}"
                ))),
            }
        })
        .on_read_resource(|_ctx, p| async move {
            Err(mcp_server_core::resource_not_found(
                mcp_types::version::Era::Legacy,
                &p.uri,
            ))
        })
        .into_service()
}

#[tokio::test]
async fn initialize_negotiates_the_version_and_reports_legacy_capabilities() {
    let mut c = TestClient::new(&bistro());
    let r = c.initialize("2025-06-18", json!({})).await;
    assert_eq!(
        r["result"],
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": true}, "resources": {"subscribe": true, "listChanged": true}, "logging": {}},
            "serverInfo": {"name": "Bistro", "version": "1.0"}
        })
    );
    let mut c = TestClient::new(&bistro());
    assert_eq!(
        c.initialize("2099-01-01", json!({})).await["result"]["protocolVersion"],
        "2025-11-25"
    );
    let r = c.request("ping", json!({})).await;
    assert_eq!(r["result"], json!({}));
    // Modern-only methods do not exist on a legacy session.
    assert_eq!(
        c.request("server/discover", json!({})).await["error"]["code"],
        -32601
    );
    // A request carrying the 2026-07-28 envelope is still served statelessly.
    let r = c
        .request("server/discover", with_meta(json!({}), json!({})))
        .await;
    assert_eq!(r["result"]["resultType"], "complete");
}

#[tokio::test]
async fn legacy_results_carry_no_modern_fields() {
    let mut c = TestClient::new(&bistro());
    c.initialize("2025-11-25", json!({})).await;
    let r = c.request("tools/list", json!({})).await;
    assert_eq!(r["result"], json!({"tools": []}));
    let r = c
        .request("resources/read", json!({"uri": "file:///nope"}))
        .await;
    assert_eq!(
        r["error"],
        json!({"code": -32002, "message": "Resource not found", "data": {"uri": "file:///nope"}})
    );
}

#[tokio::test]
async fn url_elicitation_travels_mid_call_and_the_answer_is_correlated() {
    let mut c = TestClient::new(&bistro());
    c.initialize("2025-11-25", json!({"elicitation": {"url": {}}}))
        .await;
    let messages = c
        .exchange_with(
            "tools/call",
            json!({"name": "pay_deposit", "arguments": {"booking_id": "b1"}}),
            |request| {
                assert_eq!(request["method"], "elicitation/create");
                assert_eq!(
                    request["params"],
                    json!({"mode": "url", "message": "A 20 EUR deposit confirms your booking.",
                "url": "https://pay.example.com/deposit/b1", "elicitationId": "deposit-b1"})
                );
                Some(json!({"result": {"action": "accept"}}))
            },
        )
        .await;
    assert_eq!(messages.len(), 2);
    assert_eq!(
        messages[1]["result"]["content"][0]["text"],
        "Complete the payment in your browser."
    );
    let declined = c
        .exchange_with("tools/call", json!({"name": "pay_deposit"}), |_| {
            Some(json!({"result": {"action": "decline"}}))
        })
        .await;
    assert_eq!(
        declined[1]["result"]["content"][0]["text"],
        "No deposit taken. The booking expires in one hour."
    );
    let confirmed = c
        .exchange("tools/call", json!({"name": "confirm_deposit"}))
        .await;
    assert_eq!(
        confirmed[0],
        json!({"jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": {"elicitationId": "deposit-b1"}})
    );
}

#[tokio::test]
async fn a_client_error_answer_propagates_to_the_call() {
    let mut c = TestClient::new(&bistro());
    c.initialize("2025-11-25", json!({"elicitation": {"url": {}}}))
        .await;
    let messages = c
        .exchange_with("tools/call", json!({"name": "pay_deposit"}), |_| {
            Some(json!({"error": {"code": -32600, "message": "Elicitation not supported"}}))
        })
        .await;
    assert_eq!(
        messages[1]["error"],
        json!({"code": -32600, "message": "Elicitation not supported"})
    );
}

#[tokio::test]
async fn an_undeclared_capability_is_never_requested() {
    let mut c = TestClient::new(&bistro());
    c.initialize("2025-11-25", json!({"elicitation": {}})).await;
    let messages = c
        .exchange("tools/call", json!({"name": "pay_deposit"}))
        .await;
    assert_eq!(
        messages.len(),
        1,
        "no elicitation/create may be sent: {messages:?}"
    );
    assert_eq!(messages[0]["error"]["code"], -32021);
    assert_eq!(
        messages[0]["error"]["data"],
        json!({"requiredCapabilities": {"elicitation": {"url": {}}}})
    );
    let messages = c.exchange("tools/call", json!({"name": "roots"})).await;
    assert_eq!(
        messages[0]["error"]["data"],
        json!({"requiredCapabilities": {"roots": {}}})
    );
}

#[tokio::test]
async fn an_unanswered_request_times_out_and_is_cancelled_on_the_client() {
    let mut c = TestClient::new(&bistro());
    c.initialize("2025-11-25", json!({"roots": {"listChanged": true}}))
        .await;
    let messages = c.exchange("tools/call", json!({"name": "roots"})).await;
    let methods: Vec<_> = messages
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("response"))
        .collect();
    assert_eq!(
        methods,
        ["roots/list", "notifications/cancelled", "response"]
    );
    assert_eq!(messages[1]["params"]["requestId"], messages[0]["id"]);
    assert_eq!(messages[2]["error"]["code"], -32603);
    assert_eq!(
        messages[2]["error"]["message"],
        "The client did not answer 'roots/list' within 200 ms"
    );
}

#[tokio::test]
async fn a_back_channel_request_on_a_modern_request_fails_clearly() {
    let mut c = TestClient::new(&bistro());
    let r = c
        .modern(
            "tools/call",
            json!({"name": "pay_deposit"}),
            json!({"elicitation": {"url": {}}}),
        )
        .await;
    assert_eq!(
        r["error"],
        json!({"code": -32600,
        "message": "Cannot send 'elicitation/create': this transport context has no back-channel for server-initiated requests."})
    );
    assert_eq!(
        PeerError::NoBackChannel {
            method: "roots/list"
        }
        .to_string(),
        "Cannot send 'roots/list': this transport context has no back-channel for server-initiated requests."
    );
}

#[tokio::test]
async fn set_level_filters_log_messages() {
    let mut c = TestClient::new(&bistro());
    c.initialize("2025-11-25", json!({})).await;
    let all = c.exchange("tools/call", json!({"name": "log"})).await;
    assert_eq!(all.len(), 3, "both levels by default: {all:?}");
    assert_eq!(
        c.request("logging/setLevel", json!({"level": "error"}))
            .await["result"],
        json!({})
    );
    let filtered = c.exchange("tools/call", json!({"name": "log"})).await;
    assert_eq!(filtered.len(), 2);
    assert_eq!(
        filtered[0]["params"],
        json!({"level": "error", "data": "error"})
    );
}

#[tokio::test]
async fn list_changes_and_subscribed_resource_updates_reach_the_session() {
    let mut c = TestClient::new(&bistro());
    c.initialize("2025-11-25", json!({})).await;
    assert_eq!(
        c.request("resources/subscribe", json!({"uri": "file:///cfg.json"}))
            .await["result"],
        json!({})
    );
    c.exchange("tools/call", json!({"name": "change"})).await;
    let mut unsolicited = Vec::new();
    for _ in 0..2 {
        let m = tokio::time::timeout(Duration::from_secs(2), c.conn.recv())
            .await
            .unwrap()
            .unwrap()
            .to_value();
        unsolicited.push(m);
    }
    assert_eq!(
        unsolicited,
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "file:///cfg.json"}}),
        ]
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(50), c.conn.recv())
            .await
            .is_err(),
        "an unsubscribed URI was announced"
    );
}

#[tokio::test]
async fn cancelling_the_call_cancels_its_pending_server_to_client_request() {
    let mut c = TestClient::new(&bistro());
    c.initialize("2025-11-25", json!({"roots": {}})).await;
    let call = json!({"jsonrpc": "2.0", "id": "call-1", "method": "tools/call", "params": {"name": "roots"}});
    c.conn.send_raw(call.to_string().into_bytes());
    let roots = c.conn.recv().await.unwrap().to_value();
    assert_eq!(roots["method"], "roots/list");
    c.notify("notifications/cancelled", json!({"requestId": "call-1"}));
    let cancelled = tokio::time::timeout(Duration::from_secs(2), c.conn.recv())
        .await
        .unwrap()
        .unwrap()
        .to_value();
    assert_eq!(cancelled["method"], "notifications/cancelled");
    assert_eq!(cancelled["params"]["requestId"], roots["id"]);
    // No response for the cancelled call, and a late answer to roots/list is ignored.
    c.conn.send_raw(
        json!({"jsonrpc": "2.0", "id": roots["id"], "result": {"roots": []}})
            .to_string()
            .into_bytes(),
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(100), c.conn.recv())
            .await
            .is_err()
    );
    assert_eq!(c.request("ping", json!({})).await["result"], json!({}));
}
