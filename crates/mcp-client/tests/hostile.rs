//! The client against a server that asks too much: requests on a 2026-07-28 connection, a
//! flood of server-to-client requests on a 2025-11-25 session, input requests for capabilities
//! the client never declared, and rounds with too many questions.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_client::{BoxFuture, Client, ClientError, Mode, Transport};
use mcp_types::JsonRpcMessage;
use mcp_types::elicitation::ElicitResult;
use mcp_types::sampling::CreateMessageResult;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// A server the test drives by hand: it answers `initialize` itself and `tools/call` with
/// `call_answer`; everything the client sends goes to `sent`, everything pushed on `inbound`
/// reaches the client.
struct Scripted {
    call_answer: Value,
    inbound: mpsc::UnboundedSender<JsonRpcMessage>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<JsonRpcMessage>>,
    sent: mpsc::UnboundedSender<Value>,
}

impl Transport for Scripted {
    fn send(&self, message: JsonRpcMessage) -> BoxFuture<'_, Result<(), String>> {
        let value = message.to_value();
        let reply = match value["method"].as_str() {
            Some("initialize") => Some(json!({"jsonrpc": "2.0", "id": value["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}})),
            Some("tools/call") => Some(
                json!({"jsonrpc": "2.0", "id": value["id"], "result": self.call_answer.clone()}),
            ),
            _ => None,
        };
        if let Some(reply) = reply {
            let _ = self
                .inbound
                .send(JsonRpcMessage::from_value(&reply).unwrap());
        }
        let _ = self.sent.send(value);
        Box::pin(async { Ok(()) })
    }

    fn receive(&self) -> BoxFuture<'_, Option<JsonRpcMessage>> {
        Box::pin(async move { self.rx.lock().await.recv().await })
    }
}

fn scripted(
    call_answer: Value,
) -> (
    Scripted,
    mpsc::UnboundedSender<JsonRpcMessage>,
    mpsc::UnboundedReceiver<Value>,
) {
    let (inbound, rx) = mpsc::unbounded_channel();
    let (sent, sent_rx) = mpsc::unbounded_channel();
    (
        Scripted {
            call_answer,
            inbound: inbound.clone(),
            rx: tokio::sync::Mutex::new(rx),
            sent,
        },
        inbound,
        sent_rx,
    )
}

fn server_request(id: i64, method: &str, params: Value) -> JsonRpcMessage {
    JsonRpcMessage::from_value(
        &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    )
    .unwrap()
}

/// The next message the client sent that answers a server request.
async fn next_answer(sent: &mut mpsc::UnboundedReceiver<Value>) -> Value {
    loop {
        let message = sent.recv().await.unwrap();
        if message.get("method").is_none() {
            return message;
        }
    }
}

fn elicit_form() -> Value {
    json!({"message": "ok?", "requestedSchema": {"type": "object", "properties": {}}})
}

#[tokio::test]
async fn a_2026_client_refuses_server_requests_without_running_callbacks() {
    let (transport, inbound, mut sent) = scripted(json!({}));
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let _client = Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .sampling(move |_, _| {
            counter.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Err(mcp_types::ErrorObject::internal("must not run")))
                as std::future::Ready<Result<CreateMessageResult, _>>
        })
        .connect(transport)
        .await
        .unwrap();
    inbound
        .send(server_request(
            7,
            "sampling/createMessage",
            json!({"messages": [], "maxTokens": 5}),
        ))
        .unwrap();
    let answer = next_answer(&mut sent).await;
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["error"]["code"], -32601);
    assert_eq!(
        answer["error"]["message"],
        "'sampling/createMessage': a 2026-07-28 client serves no server-to-client requests"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_legacy_flood_of_server_requests_is_served_up_to_the_cap() {
    let (transport, inbound, mut sent) = scripted(json!({}));
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let (release, released) = tokio::sync::watch::channel(false);
    let _client = Client::builder()
        .mode(Mode::Legacy)
        .max_server_requests(4)
        .elicitation(move |_, _| {
            counter.fetch_add(1, Ordering::SeqCst);
            let mut released = released.clone();
            async move {
                let _ = released.wait_for(|r| *r).await;
                Ok(ElicitResult::decline())
            }
        })
        .connect(transport)
        .await
        .unwrap();
    for id in 0..20 {
        inbound
            .send(server_request(id, "elicitation/create", elicit_form()))
            .unwrap();
    }
    // The four served ones block in their callback; the other sixteen are refused at once.
    let mut refused = Vec::new();
    for _ in 0..16 {
        let answer = next_answer(&mut sent).await;
        assert_eq!(answer["error"]["code"], -32000, "{answer}");
        assert_eq!(
            answer["error"]["message"],
            "the client is already serving 4 server requests (ClientBuilder::max_server_requests); try again later"
        );
        refused.push(answer["id"].as_i64().unwrap());
    }
    assert_eq!(refused, (4..20).collect::<Vec<_>>());
    release.send(true).unwrap();
    for _ in 0..4 {
        let answer = next_answer(&mut sent).await;
        assert_eq!(answer["result"]["action"], "decline", "{answer}");
    }
    assert_eq!(ran.load(Ordering::SeqCst), 4);
    // The slots are free again.
    inbound
        .send(server_request(99, "elicitation/create", elicit_form()))
        .unwrap();
    assert_eq!(next_answer(&mut sent).await["result"]["action"], "decline");
}

fn input_required(requests: Value) -> Value {
    json!({"resultType": "input_required", "inputRequests": requests})
}

#[tokio::test]
async fn input_requests_for_undeclared_capabilities_run_no_callback() {
    let url = json!({"u": {"method": "elicitation/create", "params": {
        "mode": "url", "message": "open", "url": "https://example.com/x", "elicitationId": "e"}}});
    let tools = json!({"s": {"method": "sampling/createMessage", "params": {
        "messages": [], "maxTokens": 5, "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}}});
    for (answer, expected) in [
        (
            input_required(url),
            ClientError::UndeclaredCapability {
                capability: "elicitation (URL mode)",
                key: "u".into(),
            },
        ),
        (
            input_required(tools),
            ClientError::UndeclaredCapability {
                capability: "sampling with tools",
                key: "s".into(),
            },
        ),
    ] {
        let (transport, _inbound, _sent) = scripted(answer);
        let ran = Arc::new(AtomicUsize::new(0));
        let (elicited, sampled) = (ran.clone(), ran.clone());
        let client = Client::builder()
            .mode(Mode::Pinned("2026-07-28".into()))
            .elicitation(move |_, _| {
                elicited.fetch_add(1, Ordering::SeqCst);
                std::future::ready(Ok(ElicitResult::decline()))
            })
            .elicitation_modes(true, false)
            .sampling(move |_, _| {
                sampled.fetch_add(1, Ordering::SeqCst);
                std::future::ready(Err(mcp_types::ErrorObject::internal("must not run")))
                    as std::future::Ready<Result<CreateMessageResult, _>>
            })
            .connect(transport)
            .await
            .unwrap();
        let e = client.call_tool("t", json!({})).await.unwrap_err();
        assert_eq!(e, expected);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }
}

#[tokio::test]
async fn a_round_with_too_many_questions_is_refused_before_any_callback() {
    let many: serde_json::Map<String, Value> = (0..40)
        .map(|i| {
            (
                format!("q{i}"),
                json!({"method": "elicitation/create", "params": elicit_form()}),
            )
        })
        .collect();
    let (transport, _inbound, _sent) = scripted(input_required(Value::Object(many)));
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let client = Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .elicitation(move |_, _| {
            counter.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Ok(ElicitResult::decline()))
        })
        .connect(transport)
        .await
        .unwrap();
    let e = client.call_tool("t", json!({})).await.unwrap_err();
    assert_eq!(e, ClientError::TooManyInputRequests { count: 40, max: 32 });
    assert_eq!(
        e.to_string(),
        "the server asked 40 questions in one round; this client answers at most 32 (ClientBuilder::max_input_requests)"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}
