//! Every message in `fixtures/captures/*.jsonl` (real traffic between the Python SDK's client
//! and server, both eras, stdio and HTTP) decodes into its typed form and re-encodes to JSON
//! equal to the original.

mod common;

use std::collections::HashMap;

use mcp_types::jsonrpc::MessageErrorKind;
use mcp_types::{
    ClientNotification, ClientRequest, ClientResult, JsonRpcMessage, JsonRpcResponse, RequestId,
    ServerNotification, ServerRequest, ServerResult,
};
use serde_json::Value;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Dir {
    ClientToServer,
    ServerToClient,
}

/// What a capture holds: messages with their direction, and raw bodies that are not messages.
struct Capture {
    messages: Vec<(Dir, Value)>,
    raw_bodies: Vec<Value>,
}

fn load(path: &std::path::Path) -> Capture {
    let text = std::fs::read_to_string(path).unwrap();
    let mut capture = Capture {
        messages: Vec::new(),
        raw_bodies: Vec::new(),
    };
    let mut records: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // HTTP exchanges are logged when they finish; replay them in the order they started, so a
    // server-to-client request on a POST's SSE stream precedes the POST that answers it.
    records.sort_by(|a, b| {
        let start = |r: &Value| {
            r["t_start"]
                .as_f64()
                .or_else(|| r["seq"].as_f64())
                .unwrap_or(0.0)
        };
        start(a).total_cmp(&start(b))
    });
    for record in records {
        if let Some(msg) = record.get("msg") {
            let dir = match record["dir"].as_str() {
                Some("c2s") => Dir::ClientToServer,
                Some("s2c") => Dir::ServerToClient,
                other => panic!("unknown direction {other:?} in {}", path.display()),
            };
            capture.messages.push((dir, msg.clone()));
            continue;
        }
        let request_body = &record["request"]["body"];
        match request_body {
            Value::Object(_) => capture
                .messages
                .push((Dir::ClientToServer, request_body.clone())),
            Value::Null => {}
            other => capture.raw_bodies.push(other.clone()),
        }
        let response = &record["response"];
        if let Some(body) = response.get("body").filter(|b| b.is_object()) {
            capture.messages.push((Dir::ServerToClient, body.clone()));
        }
        for event in response
            .get("sse_events")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(data) = event.get("data").filter(|d| d.is_object()) {
                capture.messages.push((Dir::ServerToClient, data.clone()));
            }
        }
    }
    capture
}

/// Decodes `value` into its typed form and encodes it back.
fn round_trip(dir: Dir, value: &Value, methods: &mut HashMap<(Dir, RequestId), String>) -> Value {
    let message = JsonRpcMessage::from_value(value).unwrap_or_else(|e| panic!("{e}: {value}"));
    let rebuilt = match message {
        JsonRpcMessage::Request(request) => {
            methods.insert((dir, request.id.clone()), request.method.clone());
            let mut rebuilt = match dir {
                Dir::ClientToServer => ClientRequest::from_request(&request)
                    .map(|typed| typed.to_request(request.id.clone()).unwrap()),
                Dir::ServerToClient => ServerRequest::from_request(&request)
                    .map(|typed| typed.to_request(request.id.clone()).unwrap()),
            }
            .unwrap_or_else(|e| panic!("{e}: {value}"));
            rebuilt.extra = request.extra;
            JsonRpcMessage::Request(rebuilt)
        }
        JsonRpcMessage::Notification(notification) => {
            let mut rebuilt = match dir {
                Dir::ClientToServer => ClientNotification::from_notification(&notification)
                    .map(|typed| typed.to_notification().unwrap()),
                Dir::ServerToClient => ServerNotification::from_notification(&notification)
                    .map(|typed| typed.to_notification().unwrap()),
            }
            .unwrap_or_else(|e| panic!("{e}: {value}"));
            rebuilt.extra = notification.extra;
            JsonRpcMessage::Notification(rebuilt)
        }
        JsonRpcMessage::Response(response) => {
            let request_dir = match dir {
                Dir::ClientToServer => Dir::ServerToClient,
                Dir::ServerToClient => Dir::ClientToServer,
            };
            let method = methods
                .get(&(request_dir, response.id.clone()))
                .unwrap_or_else(|| panic!("no request for response {value}"))
                .clone();
            let result = match dir {
                Dir::ServerToClient => serde_json::to_value(
                    ServerResult::decode(&method, &response.result)
                        .unwrap_or_else(|e| panic!("{e}: {value}")),
                ),
                Dir::ClientToServer => serde_json::to_value(
                    ClientResult::decode(&method, &response.result)
                        .unwrap_or_else(|e| panic!("{e}: {value}")),
                ),
            }
            .unwrap();
            let mut rebuilt = JsonRpcResponse::new(response.id, &result).unwrap();
            rebuilt.extra = response.extra;
            JsonRpcMessage::Response(rebuilt)
        }
        error @ JsonRpcMessage::Error(_) => error,
    };
    rebuilt.to_value()
}

#[test]
fn every_captured_message_round_trips_through_its_typed_form() {
    let dir = common::fixtures_dir().join("captures");
    let mut files = 0;
    let mut total = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".jsonl") || name == "request_state_vectors.jsonl" {
            continue;
        }
        let capture = load(&path);
        assert!(!capture.messages.is_empty(), "{name} holds no messages");
        let mut methods = HashMap::new();
        for (direction, value) in &capture.messages {
            let back = round_trip(*direction, value, &mut methods);
            assert_eq!(
                &back, value,
                "{name}: re-encoded message differs from the capture"
            );
        }
        files += 1;
        total += capture.messages.len();
    }
    assert_eq!(
        files, 20,
        "expected the 20 traffic captures of fixtures/captures"
    );
    assert!(total >= 200, "only {total} messages were checked");
    eprintln!("{total} captured messages from {files} files round-tripped");
}

#[test]
fn captured_non_message_bodies_are_rejected_with_the_right_code() {
    let capture = load(&common::fixtures_dir().join("captures/http_2026_raw_probe.jsonl"));
    assert_eq!(
        capture.raw_bodies.len(),
        2,
        "the probe sends a batch and a truncated body"
    );
    for body in &capture.raw_bodies {
        let err = match body {
            Value::String(text) => JsonRpcMessage::from_str(text).unwrap_err(),
            other => JsonRpcMessage::from_value(other).unwrap_err(),
        };
        match body {
            Value::Array(_) => {
                assert_eq!(err.kind, MessageErrorKind::InvalidRequest);
                assert_eq!(err.code().0, -32600);
                assert_eq!(
                    err.message,
                    "JSON-RPC batches are not supported: send exactly one message object"
                );
            }
            _ => {
                assert_eq!(err.kind, MessageErrorKind::Parse);
                assert_eq!(err.code().0, -32700);
            }
        }
    }
}
