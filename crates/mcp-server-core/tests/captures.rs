//! Replays the Python SDK's low-level captures (`stdio_2026_lowlevel_*`) against an equivalent
//! server built here and compares what comes back, message for message.

mod common;

use common::{TestClient, provisioner};
use mcp_server_core::seal::RequestStateSecurity;
use serde_json::{Value, json};

fn load(name: &str) -> Vec<(String, Value)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/captures")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read the capture {}: {e}", path.display()));
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| (r["dir"].as_str().unwrap().to_owned(), r["msg"].clone()))
        .collect()
}

async fn replay(name: &str, service: mcp_server_core::Service, sealed: bool) {
    let mut client = TestClient::new(&service);
    let frames = load(name);
    let mut last_state: Option<Value> = None;
    let mut compared = 0;
    for (i, (dir, message)) in frames.iter().enumerate() {
        if dir != "c2s" {
            continue;
        }
        let mut request = message.clone();
        if sealed && request["params"].get("requestState").is_some() {
            // The capture's token was sealed by the Python server's key; echo ours instead.
            request["params"]["requestState"] = last_state.clone().unwrap();
        }
        let got = client
            .exchange_raw(&request.to_string(), &request["id"])
            .await
            .pop()
            .unwrap();
        let mut expected = frames[i + 1].1.clone();
        assert_eq!(frames[i + 1].0, "s2c");
        let mut got = got;
        if let Some(state) = got["result"].get("requestState").cloned() {
            last_state = Some(state.clone());
            if sealed {
                assert!(state.as_str().unwrap().starts_with("v1."));
                assert!(
                    expected["result"]["requestState"]
                        .as_str()
                        .unwrap()
                        .starts_with("v1.")
                );
                got["result"]["requestState"] = json!("<sealed>");
                expected["result"]["requestState"] = json!("<sealed>");
            }
        }
        if let Some(versions) = got["result"].get_mut("supportedVersions") {
            // A dual-era server also lists the handshake version a legacy client reaches.
            assert_eq!(versions, &json!(["2026-07-28", "2025-11-25"]));
            *versions = json!(["2026-07-28"]);
        }
        assert_eq!(got, expected, "{name}: response to {request}");
        compared += 1;
    }
    assert_eq!(compared, 4, "{name}");
}

#[tokio::test]
async fn the_plaintext_state_capture_replays_identically() {
    replay(
        "stdio_2026_lowlevel_plaintext_state.jsonl",
        provisioner("lowlevel-demo", "0.0.1").into_service(),
        false,
    )
    .await;
}

#[tokio::test]
async fn the_sealed_state_capture_replays_identically_but_for_the_token() {
    let service = provisioner("lowlevel-demo", "0.0.1")
        .request_state_security(RequestStateSecurity::ephemeral())
        .unwrap()
        .into_service();
    replay("stdio_2026_lowlevel_sealed_state.jsonl", service, true).await;
}
