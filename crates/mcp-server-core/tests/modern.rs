//! 2026-07-28 requests through the in-memory transport: envelope and version validation in the
//! digest's order, removed and unadvertised methods, discover, result stamping, progress and
//! logging opt-ins, cancellation.

mod common;

use std::time::Duration;

use common::{TestClient, provisioner, with_meta};
use mcp_server_core::Server;
use mcp_types::logging::LoggingLevel;
use mcp_types::mrtr::Outcome;
use mcp_types::tools::CallToolResult;
use serde_json::json;

fn service() -> mcp_server_core::Service {
    provisioner("lowlevel-demo", "0.0.1").into_service()
}

#[tokio::test]
async fn a_request_without_meta_is_invalid_params_with_the_id_echoed() {
    let mut c = TestClient::new(&service());
    let r = c.request("server/discover", json!({})).await;
    assert_eq!(
        r,
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602,
        "message": "params._meta must be an object carrying the required 'io.modelcontextprotocol/protocolVersion' and 'io.modelcontextprotocol/clientCapabilities' envelope keys"}})
    );
    let r = c
        .request(
            "server/discover",
            json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(
        r["error"]["message"],
        "params._meta is missing the required envelope key(s): io.modelcontextprotocol/protocolVersion"
    );
    let r = c
        .request(
            "server/discover",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
        )
        .await;
    assert_eq!(
        r["error"]["message"],
        "params._meta is missing the required envelope key(s): io.modelcontextprotocol/clientCapabilities"
    );
    assert_eq!(r["id"], 3);
}

#[tokio::test]
async fn a_request_without_client_info_is_served() {
    let mut c = TestClient::new(&service());
    let params = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}});
    let r = c.request("tools/list", params).await;
    assert_eq!(r["result"]["tools"][0]["name"], "provision");
}

#[tokio::test]
async fn an_unsupported_version_names_supported_and_requested() {
    let mut c = TestClient::new(&service());
    let mut params = with_meta(json!({}), json!({}));
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let r = c.request("server/discover", params.clone()).await;
    assert_eq!(
        r["error"],
        json!({"code": -32022, "message": "Unsupported protocol version",
        "data": {"supported": ["2026-07-28"], "requested": "v999.0.0"}})
    );
    // A legacy version inside the envelope is not a way to speak legacy.
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    assert_eq!(
        c.request("tools/list", params.clone()).await["error"]["code"],
        -32022
    );
    // The version check comes before the method check.
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    assert_eq!(
        c.request("unknown/method", params).await["error"]["code"],
        -32022
    );
}

#[tokio::test]
async fn removed_and_unknown_methods_are_method_not_found_with_the_method_as_data() {
    let mut c = TestClient::new(&service());
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "unknown/method",
    ] {
        let id = c.next_id();
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": with_meta(json!({"uri": "x://y", "level": "info", "protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}), json!({}))});
        // `initialize` on a stream starts a legacy session whatever it carries; the modern path
        // (HTTP) is exercised through `Service::handle_modern`.
        if method == "initialize" {
            continue;
        }
        let r = c
            .exchange_raw(&request.to_string(), &json!(id))
            .await
            .pop()
            .unwrap();
        assert_eq!(
            r["error"],
            json!({"code": -32601, "message": "Method not found", "data": method}),
            "{method}"
        );
    }
}

#[tokio::test]
async fn removed_methods_without_their_own_params_are_method_not_found_not_invalid_params() {
    let service = service();
    for (id, method) in [
        "initialize",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ]
    .into_iter()
    .enumerate()
    {
        let request =
            mcp_types::JsonRpcRequest::new(id as i64, method, &with_meta(json!({}), json!({})))
                .unwrap();
        let out: Vec<String> = service
            .handle_modern(request, Default::default())
            .collect()
            .await
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            out,
            vec![format!(
                r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"Method not found","data":"{method}"}}}}"#
            )],
            "{method}"
        );
    }
}

#[tokio::test]
async fn initialize_on_the_modern_path_is_method_not_found() {
    let service = service();
    let request = mcp_types::JsonRpcRequest::new(
        7,
        "initialize",
        &with_meta(json!({"protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}), json!({})),
    )
    .unwrap();
    let out = common::values(
        service
            .handle_modern(request, Default::default())
            .collect()
            .await,
    );
    assert_eq!(
        out,
        vec![
            json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "Method not found", "data": "initialize"}})
        ]
    );
}

#[tokio::test]
async fn unadvertised_capabilities_are_method_not_found() {
    let mut c = TestClient::new(&service());
    for method in [
        "prompts/list",
        "resources/list",
        "resources/read",
        "completion/complete",
        "subscriptions/listen",
    ] {
        let r = c.modern(method, json!({"uri": "x://y", "name": "p", "notifications": {}, "ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}}), json!({})).await;
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
    }
}

#[tokio::test]
async fn discover_reports_versions_capabilities_and_identity() {
    let service = Server::new("svc")
        .version("2.0")
        .instructions("Be nice.")
        .logging(true)
        .on_list_prompts(|_c, _p| async { Ok(Default::default()) })
        .into_service();
    let mut c = TestClient::new(&service);
    let r = c.modern("server/discover", json!({}), json!({})).await;
    assert_eq!(
        r["result"],
        json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28", "2025-11-25"],
            "capabilities": {"prompts": {"listChanged": false}, "logging": {}},
            "instructions": "Be nice.",
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "svc", "version": "2.0"}}
        })
    );
}

#[tokio::test]
async fn every_result_carries_result_type_server_info_and_cache_hints_where_required() {
    let mut c = TestClient::new(&service());
    let list = c.modern("tools/list", json!({}), json!({})).await;
    assert_eq!(list["result"]["resultType"], "complete");
    assert_eq!(list["result"]["ttlMs"], 0);
    assert_eq!(list["result"]["cacheScope"], "private");
    assert_eq!(
        list["result"]["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({"name": "lowlevel-demo", "version": "0.0.1"})
    );
    let call = c
        .modern(
            "tools/call",
            json!({"name": "provision", "arguments": {"name": "orders"}}),
            json!({"elicitation": {}}),
        )
        .await;
    assert_eq!(call["result"]["resultType"], "input_required");
    assert!(
        call["result"].get("ttlMs").is_none(),
        "input_required carries no cache hints"
    );
    assert_eq!(
        call["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "lowlevel-demo"
    );
}

#[tokio::test]
async fn params_of_the_wrong_shape_are_invalid_params() {
    let mut c = TestClient::new(&service());
    let r = c
        .modern("tools/call", json!({"arguments": {}}), json!({}))
        .await;
    assert_eq!(r["error"]["code"], -32602);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Invalid params for 'tools/call': missing field `name`"),
        "{r}"
    );
    let r = c
        .modern("tools/call", json!({"name": "nope"}), json!({}))
        .await;
    assert_eq!(
        r["error"],
        json!({"code": -32602, "message": "Unknown tool: nope"})
    );
    let mut params = with_meta(json!({}), json!({}));
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("loud");
    assert_eq!(
        c.request("tools/list", params).await["error"]["code"],
        -32602
    );
}

#[tokio::test]
async fn malformed_bytes_get_parse_and_invalid_request_errors() {
    let mut c = TestClient::new(&service());
    c.conn.send_raw(b"{not json".to_vec());
    let r = c.conn.recv().await.unwrap().to_value();
    assert_eq!(r["error"]["code"], -32700);
    assert!(r.get("id").is_none());
    c.conn
        .send_raw(br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#.to_vec());
    assert_eq!(
        c.conn.recv().await.unwrap().to_value()["error"]["code"],
        -32600
    );
    c.conn
        .send_raw(br#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":[1]}"#.to_vec());
    let r = c.conn.recv().await.unwrap().to_value();
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (json!(5), json!(-32600))
    );
}

fn chatty() -> mcp_server_core::Service {
    Server::new("chatty")
        .logging(true)
        .on_call_tool(|ctx, _params| async move {
            ctx.progress(0.0, Some(100.0), None).await;
            ctx.log(LoggingLevel::Debug, Some("t"), json!("debug line"))
                .await;
            ctx.log(LoggingLevel::Error, Some("t"), json!("error line"))
                .await;
            ctx.progress(100.0, Some(100.0), Some("done")).await;
            Ok(Outcome::Complete(CallToolResult::text("ok")))
        })
        .into_service()
}

#[tokio::test]
async fn progress_only_with_a_token_and_logs_only_with_a_log_level() {
    let mut c = TestClient::new(&chatty());
    let plain = c
        .exchange("tools/call", with_meta(json!({"name": "t"}), json!({})))
        .await;
    assert_eq!(
        plain.len(),
        1,
        "no notifications without progressToken or logLevel: {plain:?}"
    );

    let mut params = with_meta(json!({"name": "t"}), json!({}));
    params["_meta"]["progressToken"] = json!("p1");
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("warning");
    let all = c.exchange("tools/call", params).await;
    let methods: Vec<&str> = all.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(
        methods,
        [
            "notifications/progress",
            "notifications/message",
            "notifications/progress"
        ]
    );
    assert_eq!(
        all[0]["params"],
        json!({"progressToken": "p1", "progress": 0.0, "total": 100.0})
    );
    assert_eq!(
        all[1]["params"],
        json!({"level": "error", "logger": "t", "data": "error line"})
    );
    assert_eq!(all[2]["params"]["message"], "done");
    assert_eq!(all[3]["result"]["content"][0]["text"], "ok");
}

#[tokio::test]
async fn notifications_cancelled_cancels_the_handler_and_nothing_is_sent_for_it() {
    // The slow tool says when it started and when it was cancelled: the test waits on those
    // signals, not on the clock, and fails if the cancellation never reaches the handler.
    let (started_tx, started) = tokio::sync::mpsc::unbounded_channel::<()>();
    let (cancelled_tx, cancelled) = tokio::sync::oneshot::channel::<()>();
    let cancelled_tx = std::sync::Mutex::new(Some(cancelled_tx));
    let service = Server::new("cancel")
        .on_call_tool(move |ctx, params| {
            let started = started_tx.clone();
            let cancelled = (params.name == "slow")
                .then(|| cancelled_tx.lock().unwrap().take())
                .flatten();
            async move {
                if let Some(cancelled) = cancelled {
                    let _ = started.send(());
                    ctx.cancellation().cancelled().await;
                    let _ = cancelled.send(());
                    return Ok(Outcome::Complete(CallToolResult::text("late")));
                }
                Ok(Outcome::Complete(CallToolResult::text("ok")))
            }
        })
        .into_service();
    let mut c = TestClient::new(&service);
    let mut started = started;
    let slow = json!({"jsonrpc": "2.0", "id": "slow-1", "method": "tools/call", "params": with_meta(json!({"name": "slow"}), json!({}))});
    c.conn.send_raw(slow.to_string().into_bytes());
    tokio::time::timeout(Duration::from_secs(5), started.recv())
        .await
        .expect("the slow tool started");
    c.notify(
        "notifications/cancelled",
        json!({"requestId": "slow-1", "reason": "user"}),
    );
    // The token fires (the signal is sent) or the handler's future is dropped (the sender with
    // it): either way the call is cancelled. Neither within the deadline: it was not.
    let fired = tokio::time::timeout(Duration::from_secs(5), cancelled).await;
    assert!(fired.is_ok(), "the handler was not cancelled: {fired:?}");
    // The next request is answered, and nothing ever arrives for the cancelled one (its
    // handler returned "late" after the cancellation: that answer must not be sent).
    let r = c
        .modern("tools/call", json!({"name": "t"}), json!({}))
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "ok");
    let late = tokio::time::timeout(Duration::from_millis(100), c.conn.recv()).await;
    assert!(late.is_err(), "a cancelled request got a message: {late:?}");
}

#[tokio::test]
async fn dropping_a_modern_stream_cancels_the_handler() {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let tx = std::sync::Mutex::new(Some(tx));
    let service = Server::new("drop")
        .on_call_tool(move |ctx, _p| {
            let tx = tx.lock().unwrap().take();
            async move {
                ctx.cancellation().cancelled().await;
                if let Some(tx) = tx {
                    let _ = tx.send(());
                }
                Ok(Outcome::Complete(CallToolResult::text("late")))
            }
        })
        .into_service();
    let request = mcp_types::JsonRpcRequest::new(
        1,
        "tools/call",
        &with_meta(json!({"name": "x"}), json!({})),
    )
    .unwrap();
    let stream = service.handle_modern(request, Default::default());
    tokio::time::sleep(Duration::from_millis(20)).await;
    drop(stream);
    // The handler future is dropped with the stream; the signal fires or the sender is dropped.
    let outcome = tokio::time::timeout(Duration::from_secs(2), rx).await;
    assert!(outcome.is_ok(), "the handler was not cancelled");
}

#[tokio::test]
async fn envelope_keys_are_read_per_request() {
    // Capabilities declared on one request are not remembered for the next.
    let mut c = TestClient::new(&service());
    let first = c
        .modern(
            "tools/call",
            json!({"name": "provision", "arguments": {"name": "a"}}),
            json!({"elicitation": {}}),
        )
        .await;
    assert_eq!(first["result"]["resultType"], "input_required");
    let second = c
        .modern(
            "tools/call",
            json!({"name": "provision", "arguments": {"name": "a"}}),
            json!({}),
        )
        .await;
    assert_eq!(second["error"]["code"], -32021);
}

#[tokio::test]
async fn a_panicking_handler_gets_an_internal_error_and_the_server_keeps_serving() {
    let service = Server::new("oops")
        .on_call_tool(|_ctx, params| async move {
            if params.name == "boom" {
                panic!("handler bug");
            }
            Ok(Outcome::Complete(CallToolResult::text("fine")))
        })
        .into_service();
    let mut c = TestClient::new(&service);
    let r = c
        .modern("tools/call", json!({"name": "boom"}), json!({}))
        .await;
    assert_eq!(
        r["error"],
        json!({"code": -32603, "message": "Internal error"})
    );
    let r = c
        .modern("tools/call", json!({"name": "ok"}), json!({}))
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "fine");
}
