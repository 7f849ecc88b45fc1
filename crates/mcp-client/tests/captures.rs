//! Replays the Python SDK's captured servers to this client: the fake server answers with the
//! recorded server messages, and every message this client sends must equal what the Python
//! client sent (ids, params, the echoed state byte for byte), `_meta` aside.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use mcp_client::{BoxFuture, Client, Mode, Transport};
use mcp_types::JsonRpcMessage;
use serde_json::{Value, json};
use tokio::sync::mpsc;

fn load(name: &str) -> Vec<(String, Value)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/captures")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read the capture {}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| (r["dir"].as_str().unwrap().to_owned(), r["msg"].clone()))
        .collect()
}

/// Plays the server side of a capture.
struct Replay {
    frames: Arc<Mutex<VecDeque<(String, Value)>>>,
    mismatches: Arc<Mutex<Vec<String>>>,
    tx: mpsc::UnboundedSender<JsonRpcMessage>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<JsonRpcMessage>>,
}

fn without_meta(mut v: Value) -> Value {
    if let Some(p) = v.get_mut("params").and_then(Value::as_object_mut) {
        p.remove("_meta");
    }
    v
}

impl Transport for Replay {
    fn send(&self, message: JsonRpcMessage) -> BoxFuture<'_, Result<(), String>> {
        let sent = message.to_value();
        let mut frames = self.frames.lock().unwrap();
        match frames.pop_front() {
            Some((dir, expected)) if dir == "c2s" => {
                if without_meta(sent.clone()) != without_meta(expected.clone()) {
                    self.mismatches
                        .lock()
                        .unwrap()
                        .push(format!("sent {sent}\nexpected {expected}"));
                }
                if let Some(meta) = expected["params"].get("_meta") {
                    for key in [
                        "io.modelcontextprotocol/protocolVersion",
                        "io.modelcontextprotocol/clientInfo",
                    ] {
                        if sent["params"]["_meta"][key] != meta[key] {
                            self.mismatches
                                .lock()
                                .unwrap()
                                .push(format!("_meta {key} differs: {sent}"));
                        }
                    }
                }
            }
            other => self
                .mismatches
                .lock()
                .unwrap()
                .push(format!("unexpected {sent} (capture had {other:?})")),
        }
        while frames.front().is_some_and(|(dir, _)| dir == "s2c") {
            let (_, reply) = frames.pop_front().unwrap();
            let _ = self.tx.send(JsonRpcMessage::from_value(&reply).unwrap());
        }
        Box::pin(async { Ok(()) })
    }

    fn receive(&self) -> BoxFuture<'_, Option<JsonRpcMessage>> {
        Box::pin(async move { self.rx.lock().await.recv().await })
    }
}

/// The recorded frames, `(direction, message)`.
type Frames = Vec<(String, Value)>;

/// The frames the replay has not played yet.
type Left = Arc<Mutex<VecDeque<(String, Value)>>>;

fn replay(name: &str) -> (Replay, Arc<Mutex<Vec<String>>>, Frames, Left) {
    let frames = load(name);
    let (tx, rx) = mpsc::unbounded_channel();
    let mismatches = Arc::new(Mutex::new(Vec::new()));
    let left: Left = Arc::new(Mutex::new(frames.clone().into()));
    let transport = Replay {
        frames: left.clone(),
        mismatches: mismatches.clone(),
        tx,
        rx: tokio::sync::Mutex::new(rx),
    };
    (transport, mismatches, frames, left)
}

/// The answers the Python client gave, by input-request key (2026) or request id (legacy).
fn recorded_answers(frames: &[(String, Value)]) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    for (dir, m) in frames {
        if dir != "c2s" {
            continue;
        }
        if let Some(responses) = m["params"].get("inputResponses").and_then(Value::as_object) {
            out.extend(responses.clone());
        }
        if m.get("result").is_some() {
            out.insert(m["id"].to_string(), m["result"].clone());
        }
    }
    out
}

/// A client with the callbacks the Python client had (read from the capabilities it declared).
fn client(answers: serde_json::Map<String, Value>, declared: &Value) -> mcp_client::ClientBuilder {
    let answers = Arc::new(answers);
    let (a1, a2, a3) = (answers.clone(), answers.clone(), answers);
    let mut builder = Client::builder().client_info("mcp", "0.1.0");
    if declared.get("elicitation").is_some() {
        builder = builder.elicitation(move |info, _| {
            let answer = a1[&info.key].clone();
            async move { Ok(serde_json::from_value(answer).unwrap()) }
        });
    }
    if declared.get("sampling").is_some() {
        builder = builder.sampling(move |info, _| {
            let answer = a2[&info.key].clone();
            async move { Ok(serde_json::from_value(answer).unwrap()) }
        });
    }
    if declared.get("roots").is_some() {
        builder = builder.roots(move |info| {
            let answer = a3[&info.key].clone();
            async move { Ok(serde_json::from_value(answer).unwrap()) }
        });
    }
    builder
}

async fn run(name: &str, mode: Mode, tool: &str, arguments: Value) -> Value {
    let (transport, mismatches, frames, left) = replay(name);
    let answers = recorded_answers(&frames);
    let first = &frames[0].1["params"];
    let declared = first
        .get("capabilities")
        .unwrap_or(&first["_meta"]["io.modelcontextprotocol/clientCapabilities"])
        .clone();
    let client = client(answers, &declared)
        .mode(mode)
        .connect(transport)
        .await
        .unwrap();
    let result = client.call_tool(tool, arguments).await.unwrap();
    let mismatches = mismatches.lock().unwrap();
    assert!(mismatches.is_empty(), "{name}:\n{}", mismatches.join("\n"));
    // The capture is used up: what is left is at most the `tools/list` the Python client sent
    // after the call, and its result (skipped on purpose). A client that stopped before the
    // end of the flow leaves more.
    let left: Vec<(String, Option<String>)> = left
        .lock()
        .unwrap()
        .iter()
        .map(|(dir, m)| {
            let what = m["method"].as_str().map(str::to_owned);
            (
                dir.clone(),
                what.or(m.get("result").map(|_| "result".to_owned())),
            )
        })
        .collect();
    let tools_list = [
        ("c2s".to_owned(), Some("tools/list".to_owned())),
        ("s2c".to_owned(), Some("result".to_owned())),
    ];
    assert!(
        left.is_empty() || left == tools_list,
        "{name}: the client stopped before the capture's end; left: {left:?}"
    );
    serde_json::to_value(result).unwrap()
}

#[tokio::test]
async fn the_2026_book_table_flow_matches_the_python_client_byte_for_byte() {
    let result = run(
        "stdio_2026_book_table_accept.jsonl",
        Mode::Auto,
        "book_table",
        json!({"date": "2026-08-01", "party": 2}),
    )
    .await;
    assert_eq!(
        result["content"][0]["text"],
        "Booked 2 on 2026-08-01. note='window seat'"
    );
}

#[tokio::test]
async fn the_2026_sampling_and_roots_round_matches_the_python_client() {
    let result = run(
        "stdio_2026_plan_trip_sampling_roots.jsonl",
        Mode::Auto,
        "plan_trip",
        json!({"city": "Lisbon"}),
    )
    .await;
    assert_eq!(
        result["content"][0]["text"],
        "Lisbon: sunny and hilly (roots: ['file:///example/project'])"
    );
}

#[tokio::test]
async fn the_legacy_book_table_flow_matches_the_python_client() {
    let result = run(
        "stdio_legacy_book_table_accept.jsonl",
        Mode::Legacy,
        "book_table",
        json!({"date": "2026-08-01", "party": 2}),
    )
    .await;
    assert_eq!(
        result["content"][0]["text"],
        "Booked 2 on 2026-08-01. note='window seat'"
    );
}

#[tokio::test]
async fn the_pinned_flow_sends_no_probe() {
    let result = run(
        "stdio_pinned_book_table_accept.jsonl",
        Mode::Pinned("2026-07-28".into()),
        "book_table",
        json!({"date": "2026-08-01", "party": 2}),
    )
    .await;
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Booked 2")
    );
}
