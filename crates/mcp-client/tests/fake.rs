//! The client against scripted fake servers: what goes on the wire, exactly.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{BoxFuture, CallOptions, Client, ClientError, Mode, Transport};
use mcp_types::JsonRpcMessage;
use mcp_types::elicitation::ElicitResult;
use mcp_types::mrtr::Outcome;
use serde_json::{Value, json};
use tokio::sync::mpsc;

type Script = dyn Fn(&Value) -> Option<Value> + Send + Sync;
/// Every message the client sent, with the (tokio) time it arrived.
type Log = Arc<Mutex<Vec<(tokio::time::Instant, Value)>>>;

/// A server that answers each request with whatever its script says, and records every
/// message the client sent with the (tokio) time it arrived.
struct Fake {
    script: Arc<Script>,
    sent: Log,
    tx: mpsc::UnboundedSender<JsonRpcMessage>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<JsonRpcMessage>>,
}

impl Fake {
    fn new(script: impl Fn(&Value) -> Option<Value> + Send + Sync + 'static) -> (Self, Log) {
        let (tx, rx) = mpsc::unbounded_channel();
        let sent = Arc::new(Mutex::new(Vec::new()));
        (
            Fake {
                script: Arc::new(script),
                sent: sent.clone(),
                tx,
                rx: tokio::sync::Mutex::new(rx),
            },
            sent,
        )
    }
}

impl Transport for Fake {
    fn send(&self, message: JsonRpcMessage) -> BoxFuture<'_, Result<(), String>> {
        let value = message.to_value();
        self.sent
            .lock()
            .unwrap()
            .push((tokio::time::Instant::now(), value.clone()));
        if let Some(mut reply) = (self.script)(&value) {
            reply["jsonrpc"] = json!("2.0");
            if value.get("id").is_some() && reply.get("method").is_none() {
                reply["id"] = value["id"].clone();
            }
            let _ = self.tx.send(JsonRpcMessage::from_value(&reply).unwrap());
        }
        Box::pin(async { Ok(()) })
    }

    fn receive(&self) -> BoxFuture<'_, Option<JsonRpcMessage>> {
        Box::pin(async move { self.rx.lock().await.recv().await })
    }
}

fn calls(sent: &Log, method: &str) -> Vec<(tokio::time::Instant, Value)> {
    sent.lock()
        .unwrap()
        .iter()
        .filter(|(_, m)| m["method"] == method)
        .cloned()
        .collect()
}

fn accept_all() -> impl Fn(
    mcp_client::RequestInfo,
    mcp_types::elicitation::ElicitRequestParams,
) -> std::future::Ready<Result<ElicitResult, mcp_types::ErrorObject>>
+ Send
+ Sync {
    |_, _| std::future::ready(Ok(ElicitResult::accept(Default::default())))
}

const ODD_STATE: &str = "{\"b\": 1,  \"a\":[2, 1.0e0], \"u\":\"caf\\u00e9\"}";

#[tokio::test]
async fn the_retry_echoes_the_state_byte_for_byte_with_a_new_id_and_the_same_params() {
    let (fake, sent) = Fake::new(|m| match m["method"].as_str()? {
        "tools/call" if m["params"].get("requestState").is_none() => {
            Some(json!({"result": {"resultType": "input_required",
            "inputRequests": {"confirm": {"method": "elicitation/create", "params": {"message": "ok?", "requestedSchema": {"type": "object", "properties": {}}}}},
            "requestState": ODD_STATE}}))
        }
        "tools/call" => Some(
            json!({"result": {"resultType": "complete", "content": [{"type": "text", "text": "done"}]}}),
        ),
        _ => None,
    });
    let client = Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .elicitation(accept_all())
        .connect(fake)
        .await
        .unwrap();
    let result = client
        .call_tool("test_mrtr_echo_state", json!({"x": 1}))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("done"));
    let legs = calls(&sent, "tools/call");
    assert_eq!(legs.len(), 2);
    let (first, retry) = (&legs[0].1, &legs[1].1);
    assert_ne!(first["id"], retry["id"], "a retry is a new request");
    assert_eq!(retry["params"]["requestState"], json!(ODD_STATE));
    assert_eq!(retry["params"]["name"], first["params"]["name"]);
    assert_eq!(retry["params"]["arguments"], first["params"]["arguments"]);
    assert_eq!(
        retry["params"]["inputResponses"],
        json!({"confirm": {"action": "accept", "content": {}}})
    );
    assert!(
        first["params"].get("inputResponses").is_none()
            && first["params"].get("requestState").is_none()
    );
    // The envelope rides on every request.
    assert_eq!(
        retry["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        retry["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}, "url": {}}})
    );
}

#[tokio::test]
async fn no_state_is_sent_when_the_server_sent_none_and_state_never_leaks_into_another_call() {
    let (fake, sent) = Fake::new(|m| {
        let p = &m["params"];
        match (m["method"].as_str()?, p["name"].as_str()) {
            ("tools/call", Some("test_mrtr_no_state")) if p.get("inputResponses").is_none() => {
                Some(json!({"result": {"resultType": "input_required",
                "inputRequests": {"confirm": {"method": "elicitation/create", "params": {"message": "ok?", "requestedSchema": {"type": "object", "properties": {}}}}}}}))
            }
            ("tools/call", _) => Some(json!({"result": {"content": []}})),
            _ => None,
        }
    });
    let client = Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .elicitation(accept_all())
        .connect(fake)
        .await
        .unwrap();
    let (a, b) = tokio::join!(
        client.call_tool("test_mrtr_no_state", json!({})),
        client.call_tool("test_mrtr_unrelated", json!({}))
    );
    a.unwrap();
    b.unwrap();
    let legs = calls(&sent, "tools/call");
    let retry = legs
        .iter()
        .map(|(_, m)| m)
        .filter(|m| m["params"]["name"] == "test_mrtr_no_state")
        .nth(1)
        .unwrap();
    assert!(
        retry["params"].get("requestState").is_none(),
        "no state was sent, so none is echoed"
    );
    for (_, m) in legs
        .iter()
        .filter(|(_, m)| m["params"]["name"] == "test_mrtr_unrelated")
    {
        assert!(
            m["params"].get("inputResponses").is_none()
                && m["params"].get("requestState").is_none()
        );
    }
}

#[tokio::test]
async fn a_result_without_result_type_is_complete_and_an_unknown_one_is_an_error() {
    let (fake, sent) = Fake::new(|m| match m["params"]["name"].as_str()? {
        "test_mrtr_no_result_type" => {
            Some(json!({"result": {"content": [{"type": "text", "text": "plain"}]}}))
        }
        _ => Some(json!({"result": {"resultType": "task", "taskId": "t1"}})),
    });
    let client = Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .connect(fake)
        .await
        .unwrap();
    let r = client
        .call_tool("test_mrtr_no_result_type", json!({}))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("plain"));
    let e = client.call_tool("tasky", json!({})).await.unwrap_err();
    assert_eq!(e, ClientError::UnrecognizedResultType("task".into()));
    assert_eq!(calls(&sent, "tools/call").len(), 2, "nothing was retried");
}

#[tokio::test(start_paused = true)]
async fn state_only_rounds_back_off_50_100_200_250_ms_and_the_cap_is_enforced() {
    let (fake, sent) = Fake::new(|m| {
        (m["method"] == "tools/call")
            .then(|| json!({"result": {"resultType": "input_required", "requestState": "poll"}}))
    });
    let client = Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .max_rounds(6)
        .connect(fake)
        .await
        .unwrap();
    let e = client.call_tool("poll", json!({})).await.unwrap_err();
    assert_eq!(e, ClientError::RoundsExceeded { max_rounds: 6 });
    assert_eq!(
        e.to_string(),
        "the server returned InputRequiredResult for more than 6 rounds; raise max_rounds on the Client, or drive the loop yourself with client.session()"
    );
    let legs = calls(&sent, "tools/call");
    assert_eq!(legs.len(), 7, "the initial call plus 6 retries");
    let gaps: Vec<u128> = legs
        .windows(2)
        .map(|w| (w[1].0 - w[0].0).as_millis())
        .collect();
    assert_eq!(gaps, [50, 100, 200, 250, 250, 250]);
}

#[tokio::test]
async fn a_missing_callback_or_an_unknown_request_is_an_error_and_nothing_is_retried() {
    let (fake, sent) = Fake::new(|m| match m["params"]["name"].as_str()? {
        "plan" => Some(
            json!({"result": {"resultType": "input_required", "inputRequests": {"p": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}}}}),
        ),
        _ => Some(
            json!({"result": {"resultType": "input_required", "inputRequests": {"x": {"method": "tools/call", "params": {}}}}}),
        ),
    });
    let client = Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .connect(fake)
        .await
        .unwrap();
    let e = client.call_tool("plan", json!({})).await.unwrap_err();
    assert_eq!(
        e,
        ClientError::MissingCallback {
            capability: "sampling",
            key: "p".into()
        }
    );
    let e = client.call_tool("weird", json!({})).await.unwrap_err();
    assert_eq!(
        e,
        ClientError::UnsupportedInputRequest {
            method: "tools/call".into(),
            key: "x".into()
        }
    );
    assert_eq!(calls(&sent, "tools/call").len(), 2);
}

#[tokio::test]
async fn auto_mode_detects_a_modern_server_and_falls_back_on_a_legacy_one() {
    let (modern, sent) = Fake::new(|m| match m["method"].as_str()? {
        "server/discover" => Some(
            json!({"result": {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
            "ttlMs": 0, "cacheScope": "private", "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "m", "version": "1"}}}}),
        ),
        _ => Some(
            json!({"result": {"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "private"}}),
        ),
    });
    let client = Client::builder().connect(modern).await.unwrap();
    assert_eq!(client.protocol_version().as_deref(), Some("2026-07-28"));
    assert_eq!(client.negotiated().unwrap().server_info.unwrap().name, "m");
    client.list_tools(None).await.unwrap();
    let methods: Vec<Value> = sent
        .lock()
        .unwrap()
        .iter()
        .map(|(_, m)| m["method"].clone())
        .collect();
    assert_eq!(methods, [json!("server/discover"), json!("tools/list")]);

    for legacy_error in [-32601, -32602, -32600] {
        let (legacy, sent) = Fake::new(move |m| match m["method"].as_str()? {
            "server/discover" => Some(json!({"error": {"code": legacy_error, "message": "nope"}})),
            "initialize" => Some(
                json!({"result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "l", "version": "1"}}}),
            ),
            "notifications/initialized" => None,
            _ => Some(json!({"result": {"tools": []}})),
        });
        let client = Client::builder().connect(legacy).await.unwrap();
        assert_eq!(client.protocol_version().as_deref(), Some("2025-11-25"));
        client.list_tools(None).await.unwrap();
        let sent = sent.lock().unwrap();
        let methods: Vec<&Value> = sent.iter().map(|(_, m)| &m["method"]).collect();
        assert_eq!(
            methods,
            [
                &json!("server/discover"),
                &json!("initialize"),
                &json!("notifications/initialized"),
                &json!("tools/list")
            ]
        );
        assert!(
            sent[3].1["params"].get("_meta").is_none(),
            "no envelope on a legacy session"
        );
    }
}

#[tokio::test]
async fn auto_mode_retries_once_on_unsupported_version_and_legacy_mode_sends_no_probe() {
    let (fake, sent) = Fake::new(|m| match m["method"].as_str()? {
        "server/discover" => Some(
            json!({"error": {"code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}}),
        ),
        _ => None,
    });
    let e = Client::builder()
        .discover_timeout(Duration::from_millis(200))
        .connect(fake)
        .await
        .unwrap_err();
    assert_eq!(
        e,
        ClientError::NoCommonVersion {
            supported: vec!["2026-07-28".into()]
        }
    );
    assert_eq!(
        calls(&sent, "server/discover").len(),
        2,
        "one retry at a version from `supported`"
    );

    let (legacy, sent) = Fake::new(|m| match m["method"].as_str()? {
        "initialize" => Some(
            json!({"result": {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "l", "version": "1"}}}),
        ),
        _ => None,
    });
    let client = Client::builder()
        .mode(Mode::Legacy)
        .connect(legacy)
        .await
        .unwrap();
    assert_eq!(client.protocol_version().as_deref(), Some("2025-06-18"));
    assert_eq!(sent.lock().unwrap()[0].1["method"], "initialize");
}

#[tokio::test]
async fn a_modern_request_refused_with_unsupported_version_is_retried_once_at_a_supported_one() {
    let refusals = Arc::new(Mutex::new(0));
    let seen = refusals.clone();
    let (fake, sent) = Fake::new(move |m| match m["method"].as_str()? {
        "tools/list" if *seen.lock().unwrap() == 0 => {
            *seen.lock().unwrap() += 1;
            Some(
                json!({"error": {"code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}}),
            )
        }
        "tools/list" => Some(json!({"result": {"resultType": "complete", "tools": []}})),
        "prompts/list" => Some(
            json!({"error": {"code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": ["2099-01-01"], "requested": "2026-07-28"}}}),
        ),
        _ => None,
    });
    let client = Client::builder()
        .client_info("c", "1")
        .mode(Mode::Pinned("2026-07-28".into()))
        .connect(fake)
        .await
        .unwrap();
    assert!(client.list_tools(None).await.unwrap().tools.is_empty());
    let lists: Vec<String> = calls(&sent, "tools/list")
        .iter()
        .map(|(_, m)| m.to_string())
        .collect();
    let envelope = r#""_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;
    assert_eq!(
        lists,
        [
            format!(r#"{{"id":1,"jsonrpc":"2.0","method":"tools/list","params":{{{envelope}}}}}"#),
            format!(r#"{{"id":2,"jsonrpc":"2.0","method":"tools/list","params":{{{envelope}}}}}"#),
        ]
    );
    // No version in common: the error, and no retry.
    let e = client.list_prompts(None).await.unwrap_err();
    assert!(
        matches!(&e, ClientError::Server(err) if err.code.0 == -32022),
        "{e:?}"
    );
    assert_eq!(calls(&sent, "prompts/list").len(), 1);
}

#[tokio::test]
async fn a_timed_out_request_is_cancelled_on_the_server() {
    let (fake, sent) = Fake::new(|_| None);
    let client = Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .request_timeout(Duration::from_millis(50))
        .connect(fake)
        .await
        .unwrap();
    let e = client.call_tool("slow", json!({})).await.unwrap_err();
    assert_eq!(
        e,
        ClientError::Timeout {
            method: "tools/call".into(),
            after: Duration::from_millis(50)
        }
    );
    // The cancellation may be sent just after the timeout is reported: wait for it (up to
    // 10 s), then make sure it is sent once.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while calls(&sent, "notifications/cancelled").is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no notifications/cancelled within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cancelled = calls(&sent, "notifications/cancelled");
    assert_eq!(cancelled.len(), 1);
    assert_eq!(
        cancelled[0].1["params"]["requestId"],
        calls(&sent, "tools/call")[0].1["id"]
    );
}

#[tokio::test]
async fn the_manual_loop_returns_each_leg_and_a_fresh_client_resumes_from_persisted_state() {
    let script = |m: &Value| match m["method"].as_str()? {
        "tools/call" => Some(
            match m["params"].get("requestState").and_then(Value::as_str) {
                None => json!({"result": {"resultType": "input_required", "requestState": "leg-1",
                "inputRequests": {"region": {"method": "elicitation/create", "params": {"message": "Which region?", "requestedSchema": {"type": "object", "properties": {"region": {"type": "string"}}}}}}}}),
                Some("leg-1")
                    if m["params"]["inputResponses"]["region"]["content"]["region"] == "eu" =>
                {
                    json!({"result": {"resultType": "complete", "content": [{"type": "text", "text": "Provisioned in eu"}]}})
                }
                Some(_) => {
                    json!({"error": {"code": -32602, "message": "Invalid or expired requestState"}})
                }
            },
        ),
        _ => None,
    };
    let (first_process, _) = Fake::new(script);
    let client = Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .connect(first_process)
        .await
        .unwrap();
    let Outcome::InputRequired(round) = client
        .session()
        .call_tool(
            "provision",
            json!({"name": "orders"}),
            CallOptions::default(),
        )
        .await
        .unwrap()
    else {
        panic!("expected input_required")
    };
    // Persist the state and the question, as a file would.
    let persisted = serde_json::to_string(&round).unwrap();
    drop(client);

    let (second_process, sent) = Fake::new(script);
    let fresh = Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .connect(second_process)
        .await
        .unwrap();
    let round: mcp_types::InputRequiredResult = serde_json::from_str(&persisted).unwrap();
    let answers = std::collections::BTreeMap::from([(
        "region".to_owned(),
        mcp_types::mrtr::InputResponse::Elicit(ElicitResult::accept(
            std::collections::BTreeMap::from([(
                "region".to_owned(),
                mcp_types::elicitation::ElicitValue::String("eu".into()),
            )]),
        )),
    )]);
    let result = fresh
        .call_tool_with(
            "provision",
            json!({"name": "orders"}),
            CallOptions::resume(Some(answers), round.request_state),
        )
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("Provisioned in eu"));
    assert_eq!(
        calls(&sent, "tools/call")[0].1["params"]["requestState"],
        "leg-1"
    );
}

#[tokio::test]
async fn declared_capabilities_notifications_and_bad_arguments() {
    let script = |m: &Value| match m["method"].as_str()? {
        "tools/call" => Some(json!({"result": {"resultType": "complete", "content": []}})),
        "prompts/get" => Some(
            match m["params"].get("requestState").and_then(Value::as_str) {
                Some("p-1") => {
                    json!({"result": {"resultType": "complete", "messages": [{"role": "user", "content": {"type": "text", "text": "resumed"}}]}})
                }
                _ => {
                    json!({"error": {"code": -32602, "message": "Invalid or expired requestState"}})
                }
            },
        ),
        _ => None,
    };
    let (fake, sent) = Fake::new(script);
    let server = fake.tx.clone();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_by_handler = seen.clone();
    let client = Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        // A manual loop with no callback still declares that it answers elicitation; the
        // sampling callback's own declaration wins over the one given here.
        .capabilities(mcp_types::capabilities::ClientCapabilities {
            elicitation: Some(Default::default()),
            sampling: Some(mcp_types::capabilities::SamplingCapability {
                tools: Some(Default::default()),
                ..Default::default()
            }),
            ..Default::default()
        })
        .sampling(|_, _| async { Err(mcp_types::ErrorObject::internal("not used in this test")) })
        .on_notification(move |n| seen_by_handler.lock().unwrap().push(n.method().to_owned()))
        .connect(fake)
        .await
        .unwrap();
    client.call_tool("noop", Value::Null).await.unwrap();
    assert_eq!(
        calls(&sent, "tools/call")[0].1["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {}, "sampling": {}})
    );
    let error = client.call_tool("noop", json!([1, 2])).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid request: tool arguments must be a JSON object or null, not [1,2]"
    );
    let error = client
        .session()
        .call_tool("noop", json!("text"), CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::InvalidRequest(_)), "{error:?}");
    assert_eq!(calls(&sent, "tools/call").len(), 1, "nothing else was sent");

    let prompt = client
        .get_prompt_with(
            "briefing",
            Default::default(),
            CallOptions::resume(None, Some("p-1".into())),
        )
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&prompt.messages).unwrap()[0]["content"]["text"],
        "resumed"
    );

    for notification in [
        json!({"jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": {"elicitationId": "deposit-1"}}),
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
    ] {
        server
            .send(JsonRpcMessage::from_value(&notification).unwrap())
            .unwrap();
    }
    for _ in 0..100 {
        if seen.lock().unwrap().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "notifications/elicitation/complete",
            "notifications/tools/list_changed"
        ]
    );
}

/// What a client declares on the wire with and without MCP Apps, in both eras: nothing more
/// than before unless asked, and exactly the extension's settings when asked.
#[tokio::test]
async fn apps_are_declared_only_when_asked_in_both_eras() {
    let script = |m: &Value| match m["method"].as_str() {
        Some("initialize") => Some(json!({"result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "s", "version": "1"}
        }})),
        Some("tools/list") => Some(json!({"result": {"tools": [], "resultType": "complete"}})),
        _ => None,
    };
    let declared = json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}});
    for (apps, want) in [(false, json!({})), (true, declared)] {
        // 2025-11-25: once, in initialize.
        let (fake, sent) = Fake::new(script);
        let client = Client::builder()
            .mode(Mode::Legacy)
            .apps(apps)
            .connect(fake)
            .await
            .unwrap();
        client.list_tools(None).await.unwrap();
        let init = calls(&sent, "initialize");
        assert_eq!(
            init[0].1["params"]["capabilities"], want,
            "legacy, apps: {apps}"
        );
        // 2026-07-28: on every request.
        let (fake, sent) = Fake::new(script);
        let client = Client::builder()
            .mode(Mode::Pinned("2026-07-28".into()))
            .apps(apps)
            .connect(fake)
            .await
            .unwrap();
        client.list_tools(None).await.unwrap();
        let list = calls(&sent, "tools/list");
        assert_eq!(
            list[0].1["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"], want,
            "modern, apps: {apps}"
        );
    }
}
