//! Multi-round-trip requests on the low-level server: the seed documents' hand-built
//! `provision` round, the sealing boundary on and off, capability gating, and the legacy rule
//! that `input_required` is an invalid result.

mod common;

use std::collections::BTreeMap;

use common::{TestClient, provisioner};
use mcp_server_core::Server;
use mcp_server_core::seal::RequestStateSecurity;
use mcp_types::InputRequiredResult;
use mcp_types::mrtr::{InputRequest, Outcome};
use mcp_types::sampling::CreateMessageRequestParams;
use mcp_types::tools::CallToolResult;
use serde_json::{Value, json};

const KEY: &str = "0123456789abcdef0123456789abcdef";
const ELICIT: &str = r#"{"elicitation": {"form": {}, "url": {}}}"#;

fn caps() -> Value {
    serde_json::from_str(ELICIT).unwrap()
}

fn call(state: Option<&Value>, answer: Option<Value>, name: &str) -> Value {
    let mut params = json!({"name": "provision", "arguments": {"name": name}});
    if let Some(state) = state {
        params["requestState"] = state.clone();
    }
    if let Some(answer) = answer {
        params["inputResponses"] = json!({"region": answer});
    }
    params
}

fn accept(region: &str) -> Value {
    json!({"action": "accept", "content": {"region": region}})
}

#[tokio::test]
async fn provision_asks_then_provisions_with_plaintext_state_when_not_sealing() {
    let mut c = TestClient::new(&provisioner("Provisioner", "1.0").into_service());
    let first = c
        .modern("tools/call", call(None, None, "orders"), caps())
        .await;
    assert_eq!(
        first["result"],
        json!({
            "resultType": "input_required",
            "inputRequests": {"region": {"method": "elicitation/create", "params": {
                "mode": "form",
                "message": "Which region should the database live in?",
                "requestedSchema": {"type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]}}}},
            "requestState": "provision-v1",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "Provisioner", "version": "1.0"}}
        })
    );
    let state = first["result"]["requestState"].clone();
    let done = c
        .modern(
            "tools/call",
            call(Some(&state), Some(accept("eu-west-1")), "orders"),
            caps(),
        )
        .await;
    assert_eq!(
        done["result"]["content"],
        json!([{"type": "text", "text": "Provisioned 'orders' in eu-west-1 (state='provision-v1')"}])
    );
    // Anything else asks again.
    let again = c
        .modern(
            "tools/call",
            call(Some(&state), Some(json!({"action": "decline"})), "orders"),
            caps(),
        )
        .await;
    assert_eq!(again["result"]["resultType"], "input_required");
    let missing = c
        .modern("tools/call", call(Some(&state), None, "orders"), caps())
        .await;
    assert_eq!(missing["result"]["resultType"], "input_required");
}

fn sealed() -> mcp_server_core::Service {
    provisioner("Provisioner", "1.0")
        .request_state_security(RequestStateSecurity::keys([KEY]).unwrap())
        .unwrap()
        .into_service()
}

#[tokio::test]
async fn with_the_boundary_state_is_sealed_on_the_wire_and_plaintext_for_the_handler() {
    let mut c = TestClient::new(&sealed());
    let first = c
        .modern("tools/call", call(None, None, "orders"), caps())
        .await;
    let token = first["result"]["requestState"].as_str().unwrap().to_owned();
    assert!(token.starts_with("v1."), "{token}");
    assert!(!token.contains("provision-v1"));
    let done = c
        .modern(
            "tools/call",
            call(Some(&json!(token)), Some(accept("eu")), "orders"),
            caps(),
        )
        .await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "Provisioned 'orders' in eu (state='provision-v1')"
    );
    // Every round is sealed afresh: a second first round gets another token.
    let again = c
        .modern("tools/call", call(None, None, "orders"), caps())
        .await;
    assert_ne!(again["result"]["requestState"], json!(token));
}

const FROZEN: &str = r#"{"code": -32602, "message": "Invalid or expired requestState", "data": {"reason": "invalid_request_state"}}"#;

#[tokio::test]
async fn tampered_replayed_foreign_and_non_string_state_all_get_the_one_error() {
    let frozen: Value = serde_json::from_str(FROZEN).unwrap();
    let mut c = TestClient::new(&sealed());
    let first = c
        .modern("tools/call", call(None, None, "orders"), caps())
        .await;
    let token = first["result"]["requestState"].as_str().unwrap().to_owned();

    let tampered = json!(format!("{token}-TAMPERED"));
    let r = c
        .modern(
            "tools/call",
            call(Some(&tampered), Some(accept("eu")), "orders"),
            caps(),
        )
        .await;
    assert_eq!(r["error"], frozen, "tampered");
    // Replayed with other arguments.
    let r = c
        .modern(
            "tools/call",
            call(Some(&json!(token)), Some(accept("eu")), "billing"),
            caps(),
        )
        .await;
    assert_eq!(r["error"], frozen, "other arguments");
    // A non-string state.
    let r = c
        .modern(
            "tools/call",
            call(Some(&json!(42)), Some(accept("eu")), "orders"),
            caps(),
        )
        .await;
    assert_eq!(r["error"], frozen, "non-string");
    // Plaintext a client made up.
    let r = c
        .modern(
            "tools/call",
            call(Some(&json!("provision-v1")), Some(accept("eu")), "orders"),
            caps(),
        )
        .await;
    assert_eq!(r["error"], frozen, "forged");
    // A token from a server with another key.
    let other = provisioner("Provisioner", "1.0")
        .request_state_security(
            RequestStateSecurity::keys(["another-key-of-thirty-two-bytes!!"]).unwrap(),
        )
        .unwrap()
        .into_service();
    let mut o = TestClient::new(&other);
    let foreign = o
        .modern("tools/call", call(None, None, "orders"), caps())
        .await["result"]["requestState"]
        .clone();
    let r = c
        .modern(
            "tools/call",
            call(Some(&foreign), Some(accept("eu")), "orders"),
            caps(),
        )
        .await;
    assert_eq!(r["error"], frozen, "other key");
    // A null state counts as absent: the first round again.
    let r = c
        .modern(
            "tools/call",
            call(Some(&Value::Null), None, "orders"),
            caps(),
        )
        .await;
    assert_eq!(r["result"]["resultType"], "input_required");
}

#[tokio::test]
async fn state_is_verified_even_for_handlers_that_never_emit_state() {
    let service = Server::new("plain")
        .on_call_tool(|_c, _p| async { Ok(Outcome::Complete(CallToolResult::text("done"))) })
        .request_state_security(RequestStateSecurity::ephemeral())
        .unwrap()
        .into_service();
    let mut c = TestClient::new(&service);
    let r = c
        .modern(
            "tools/call",
            json!({"name": "x", "requestState": "anything"}),
            json!({}),
        )
        .await;
    assert_eq!(r["error"]["message"], "Invalid or expired requestState");
    let r = c
        .modern("tools/call", json!({"name": "x"}), json!({}))
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "done");
}

#[tokio::test]
async fn a_sealed_state_does_not_verify_on_another_tool_of_the_same_server() {
    let service = Server::new("two")
        .on_call_tool(|ctx, p| async move {
            match ctx.request_state() {
                Some(s) => Ok(Outcome::Complete(CallToolResult::text(format!(
                    "{} got {s}",
                    p.name
                )))),
                None => Ok(Outcome::InputRequired(InputRequiredResult::state_only(
                    format!("{}-state", p.name),
                ))),
            }
        })
        .request_state_security(RequestStateSecurity::ephemeral())
        .unwrap()
        .into_service();
    let mut c = TestClient::new(&service);
    let a = c
        .modern("tools/call", json!({"name": "a"}), json!({}))
        .await["result"]["requestState"]
        .clone();
    let ok = c
        .modern(
            "tools/call",
            json!({"name": "a", "requestState": a}),
            json!({}),
        )
        .await;
    assert_eq!(ok["result"]["content"][0]["text"], "a got a-state");
    let replay = c
        .modern(
            "tools/call",
            json!({"name": "b", "requestState": a}),
            json!({}),
        )
        .await;
    assert_eq!(
        replay["error"]["message"],
        "Invalid or expired requestState"
    );
}

fn asking(request: InputRequest) -> mcp_server_core::Service {
    Server::new("gate")
        .on_call_tool(move |_c, _p| {
            let request = request.clone();
            async move {
                Ok(Outcome::InputRequired(InputRequiredResult::new(
                    BTreeMap::from([("q".to_owned(), request)]),
                    None,
                )))
            }
        })
        .into_service()
}

#[tokio::test]
async fn an_input_request_the_client_did_not_declare_is_never_sent() {
    let sampling = InputRequest::CreateMessage(CreateMessageRequestParams::new(vec![], 10));
    let mut c = TestClient::new(&asking(sampling.clone()));
    let r = c
        .modern(
            "tools/call",
            json!({"name": "x"}),
            json!({"elicitation": {}}),
        )
        .await;
    assert_eq!(
        r["error"],
        json!({"code": -32021,
        "message": "Client did not declare the sampling capability required by input request 'q'",
        "data": {"requiredCapabilities": {"sampling": {}}}})
    );
    let r = c
        .modern("tools/call", json!({"name": "x"}), json!({"sampling": {}}))
        .await;
    assert_eq!(
        r["result"]["inputRequests"]["q"]["method"],
        "sampling/createMessage"
    );

    let mut tools = CreateMessageRequestParams::new(vec![], 10);
    tools.tool_choice = Some(Default::default());
    let mut c = TestClient::new(&asking(InputRequest::CreateMessage(tools)));
    let r = c
        .modern("tools/call", json!({"name": "x"}), json!({"sampling": {}}))
        .await;
    assert_eq!(
        r["error"]["data"],
        json!({"requiredCapabilities": {"sampling": {"tools": {}}}})
    );

    let mut c = TestClient::new(&asking(InputRequest::ListRoots(None)));
    let r = c
        .modern("tools/call", json!({"name": "x"}), json!({}))
        .await;
    assert_eq!(
        r["error"]["data"],
        json!({"requiredCapabilities": {"roots": {}}})
    );

    let url = serde_json::from_value(json!({"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e"}})).unwrap();
    let mut c = TestClient::new(&asking(url));
    let r = c
        .modern(
            "tools/call",
            json!({"name": "x"}),
            json!({"elicitation": {}}),
        )
        .await;
    assert_eq!(
        r["error"]["data"],
        json!({"requiredCapabilities": {"elicitation": {"url": {}}}})
    );
    // Declared: sent, and the 2025-11-25 elicitationId is stripped on the 2026-07-28 wire.
    let r = c
        .modern(
            "tools/call",
            json!({"name": "x"}),
            json!({"elicitation": {"url": {}}}),
        )
        .await;
    assert_eq!(
        r["result"]["inputRequests"]["q"]["params"],
        json!({"mode": "url", "message": "m", "url": "https://x"})
    );
}

#[tokio::test]
async fn input_required_on_a_legacy_session_is_an_invalid_result() {
    let mut c = TestClient::new(&provisioner("Provisioner", "1.0").into_service());
    c.initialize("2025-11-25", caps()).await;
    let r = c
        .request(
            "tools/call",
            json!({"name": "provision", "arguments": {"name": "orders"}}),
        )
        .await;
    assert_eq!(
        r["error"],
        json!({"code": -32603, "message": "Handler returned an invalid result"})
    );
}

#[tokio::test]
async fn an_empty_input_required_round_is_an_invalid_result() {
    let service = Server::new("empty")
        .on_call_tool(|_c, _p| async { Ok(Outcome::InputRequired(InputRequiredResult::default())) })
        .into_service();
    let mut c = TestClient::new(&service);
    let r = c
        .modern("tools/call", json!({"name": "x"}), json!({}))
        .await;
    assert_eq!(r["error"]["message"], "Handler returned an invalid result");
}

#[tokio::test]
async fn without_the_boundary_state_passes_verbatim_and_must_be_a_string() {
    let mut c = TestClient::new(&provisioner("P", "1").into_service());
    let r = c
        .modern(
            "tools/call",
            call(Some(&json!("my-own-state")), Some(accept("eu")), "orders"),
            caps(),
        )
        .await;
    assert_eq!(
        r["result"]["content"][0]["text"],
        "Provisioned 'orders' in eu (state='my-own-state')"
    );
    let r = c
        .modern(
            "tools/call",
            call(Some(&json!({"x": 1})), Some(accept("eu")), "orders"),
            caps(),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602);
}

#[tokio::test]
async fn with_the_replay_guard_a_final_round_cannot_be_sent_twice() {
    let security = RequestStateSecurity::keys([KEY])
        .unwrap()
        .replay_guard(mcp_server_core::seal::MemorySeenStore::new());
    let service = provisioner("Provisioner", "1.0")
        .request_state_security(security)
        .unwrap()
        .into_service();
    let mut c = TestClient::new(&service);
    let first = c
        .modern("tools/call", call(None, None, "orders"), caps())
        .await;
    let state = first["result"]["requestState"].clone();
    let retry = call(Some(&state), Some(accept("eu-west-1")), "orders");
    let done = c.modern("tools/call", retry.clone(), caps()).await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "Provisioned 'orders' in eu-west-1 (state='provision-v1')"
    );
    let replayed = c.modern("tools/call", retry, caps()).await;
    assert_eq!(
        replayed["error"],
        json!({"code": -32602, "message": "Invalid or expired requestState", "data": {"reason": "invalid_request_state"}})
    );
}

fn context_echo() -> mcp_server_core::Service {
    Server::new("Echo")
        .request_state_security(RequestStateSecurity::ephemeral())
        .unwrap()
        .on_call_tool(|ctx, params| async move {
            let text = match ctx.request_state() {
                None if ctx.era() == mcp_types::version::Era::Legacy => {
                    format!("raw state: {:?}", params.request_state)
                }
                None => {
                    return Ok(Outcome::InputRequired(InputRequiredResult::new(
                        BTreeMap::new(),
                        Some("secret-progress".into()),
                    )));
                }
                Some(_) => format!("{ctx:?}"),
            };
            Ok(Outcome::Complete(CallToolResult::text(text)))
        })
        .into_service()
}

#[tokio::test]
async fn a_request_contexts_debug_shows_no_state_and_legacy_handlers_get_no_raw_state() {
    let service = context_echo();
    let mut c = TestClient::new(&service);
    let params = json!({"name": "echo", "arguments": {}});
    let first = c.modern("tools/call", params.clone(), json!({})).await;
    let mut retry = params.clone();
    retry["requestState"] = first["result"]["requestState"].clone();
    let done = c.modern("tools/call", retry, json!({})).await;
    let debug = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(debug.starts_with("RequestContext {"), "{debug}");
    assert!(
        debug.contains("request_state: Some(\"<redacted>\")"),
        "{debug}"
    );
    assert!(!debug.contains("secret-progress"), "{debug}");
    let mut legacy = TestClient::new(&service);
    legacy.initialize("2025-11-25", json!({})).await;
    let mut params = params;
    params["requestState"] = json!("forged-by-the-client");
    let answer = legacy.request("tools/call", params).await;
    assert_eq!(answer["result"]["content"][0]["text"], "raw state: None");
}

/// A seen-store that logs what the server core asks of it, beside the handler's own entries.
struct LoggingStore(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl mcp_server_core::seal::SeenStore for LoggingStore {
    fn first_use<'a>(&'a self, _jti: &'a str, _exp: f64) -> mcp_server_core::BoxFuture<'a, bool> {
        self.0.lock().unwrap().push("claim".into());
        Box::pin(async { true })
    }

    fn finished<'a>(&'a self, _jti: &'a str, _exp: f64) -> mcp_server_core::BoxFuture<'a, ()> {
        self.0.lock().unwrap().push("finished".into());
        Box::pin(async {})
    }
}

type Log = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// A server whose tool asks one round, then answers `done`, or an error for the tool `fails`.
fn guarded(log: &Log) -> mcp_server_core::Service {
    let security = RequestStateSecurity::keys([KEY])
        .unwrap()
        .replay_guard(LoggingStore(log.clone()));
    let handler_log = log.clone();
    Server::new("Guarded")
        .request_state_security(security)
        .unwrap()
        .on_call_tool(move |ctx, params| {
            let log = handler_log.clone();
            async move {
                let Some(state) = ctx.request_state() else {
                    return Ok(Outcome::InputRequired(InputRequiredResult::new(
                        BTreeMap::new(),
                        Some("round-1".into()),
                    )));
                };
                log.lock().unwrap().push(format!("handler {state}"));
                if params.name == "fails" {
                    return Err(mcp_types::ErrorObject::invalid_params("no such region"));
                }
                Ok(Outcome::Complete(CallToolResult::text("done")))
            }
        })
        .into_service()
}

/// Both rounds of `name`; answers the second.
async fn two_rounds(c: &mut TestClient, log: &Log, name: &str) -> Value {
    let params = json!({"name": name, "arguments": {}});
    let first = c.modern("tools/call", params.clone(), json!({})).await;
    assert_eq!(
        *log.lock().unwrap(),
        Vec::<String>::new(),
        "no state, no claim"
    );
    let mut retry = params;
    retry["requestState"] = first["result"]["requestState"].clone();
    c.modern("tools/call", retry, json!({})).await
}

#[tokio::test]
async fn a_claimed_state_is_marked_done_after_the_handler_answered_result_or_error() {
    let log = Log::default();
    let service = guarded(&log);
    let mut c = TestClient::new(&service);
    for (name, expect) in [("works", "result"), ("fails", "error")] {
        log.lock().unwrap().clear();
        let answer = two_rounds(&mut c, &log, name).await;
        assert!(answer.get(expect).is_some(), "{answer}");
        assert_eq!(
            *log.lock().unwrap(),
            ["claim", "handler round-1", "finished"],
            "{name}"
        );
    }
}

#[tokio::test]
async fn with_a_delivery_the_claim_is_marked_done_only_when_the_transport_says_so() {
    let log = Log::default();
    let service = guarded(&log);
    let delivery = std::sync::Arc::new(mcp_server_core::Delivery::new());
    let transport = mcp_server_core::TransportContext {
        delivery: Some(delivery.clone()),
        ..Default::default()
    };
    let mut c = TestClient::with_transport(&service, transport);
    let answer = two_rounds(&mut c, &log, "works").await;
    assert_eq!(answer["result"]["content"][0]["text"], "done");
    assert_eq!(*log.lock().unwrap(), ["claim", "handler round-1"]);
    assert!(!delivery.is_empty());
    delivery.finish().await;
    assert_eq!(
        *log.lock().unwrap(),
        ["claim", "handler round-1", "finished"]
    );
    assert!(delivery.is_empty());
}
