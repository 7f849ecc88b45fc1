//! What a request leaves in `tracing`: one `mcp.request` span with its documented fields, and
//! nothing secret at any level. The whole output of a full flow, a tampered retry and a
//! legacy call, captured at TRACE with every span field, must not contain the sealing key,
//! the sealed state, its plaintext, the tool's arguments or the user's answers.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::TestClient;
use mcp_server_core::registry::{Accepted, McpServer, Resolution, Resolver, ToolDef};
use mcp_server_core::seal::RequestStateSecurity;
use mcp_types::JsonObject;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const SECRET: &str = "tracing-test-secret-key-0123456789abcdef";
const ANSWER: &str = "swordfish-answer";
const ARGUMENT: &str = "classified-argument";

#[derive(Clone, Deserialize, JsonSchema)]
struct Note {
    note: String,
}

fn server() -> mcp_server_core::Service {
    let ask = Resolver::new("ask_note", |_| async {
        Resolution::<Note>::elicit("Anything to add?")
    });
    let tool = ToolDef::new("deploy")
        .resolve::<Accepted<Note>>("note", ask)
        .handler_resolved(|_c, args: JsonObject, mut r| async move {
            let Accepted(Note { note }) = r.take::<Accepted<Note>>("note")?;
            Ok::<_, String>(format!(
                "deployed {} ({} chars of notes)",
                args.get("service")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .len(),
                note.len()
            ))
        });
    McpServer::new("traced")
        .tool(tool)
        .request_state_security(RequestStateSecurity::keys([SECRET]).unwrap())
        .into_service()
        .unwrap()
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn caps() -> Value {
    json!({"elicitation": {"form": {}}})
}

#[tokio::test]
async fn a_request_is_one_span_with_its_fields_and_nothing_secret() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::TRACE)
        .with_current_span(true)
        .with_span_list(true)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let service = server();
    let mut client = TestClient::new(&service);
    let args = json!({"name": "deploy", "arguments": {"service": ARGUMENT}});
    let first = client.modern("tools/call", args.clone(), caps()).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let state = result["requestState"].as_str().unwrap().to_owned();
    let mut retry = args.clone();
    retry["inputResponses"] =
        json!({"ask_note": {"action": "accept", "content": {"note": ANSWER}}});
    retry["requestState"] = json!(state);
    let done = client.modern("tools/call", retry.clone(), caps()).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "deployed 19 (16 chars of notes)",
        "{done}"
    );
    // The same retry with one character of the state changed.
    let mut tampered = retry.clone();
    let mut bytes = state.clone().into_bytes();
    let middle = bytes.len() / 2;
    bytes[middle] = if bytes[middle] == b'A' { b'B' } else { b'A' };
    tampered["requestState"] = json!(String::from_utf8(bytes).unwrap());
    let refused = client.modern("tools/call", tampered, caps()).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    // A legacy session's call, for its era.
    let mut legacy = TestClient::new(&service);
    legacy.initialize("2025-11-25", json!({})).await;
    let listed = legacy.request("tools/list", json!({})).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    drop(_guard);

    let output = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<Value> = output
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    // One closed `mcp.request` span per request, with the documented fields.
    let closed: Vec<&Value> = lines
        .iter()
        .filter(|l| l["fields"]["message"] == "close" && l["span"]["name"] == "mcp.request")
        .collect();
    let calls: Vec<&Value> = closed
        .iter()
        .copied()
        .filter(|l| l["span"]["mcp.method.name"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 3, "{output}");
    let field = |i: usize, name: &str| calls[i]["span"][name].clone();
    assert_eq!(field(0, "mcp.protocol.version"), "2026-07-28");
    assert_eq!(field(0, "gen_ai.tool.name"), "deploy");
    assert_eq!(field(0, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(field(0, "otel.name"), "tools/call deploy");
    assert_eq!(field(0, "otel.kind"), "server");
    assert_eq!(field(0, "mcp.round"), 1);
    assert_eq!(field(0, "mcp.outcome"), "input_required");
    assert_eq!(field(1, "mcp.round"), 2);
    assert_eq!(field(1, "mcp.outcome"), "complete");
    assert_eq!(field(2, "mcp.outcome"), "error");
    assert_eq!(field(2, "rpc.response.status_code"), "-32602");
    assert_eq!(field(2, "error.type"), "-32602");
    assert!(field(1, "mcp.duration_us").is_u64(), "{}", calls[1]);
    assert!(field(0, "jsonrpc.request.id").is_string(), "{}", calls[0]);
    assert!(
        closed
            .iter()
            .any(|l| l["span"]["mcp.method.name"] == "tools/list"
                && l["span"]["mcp.protocol.version"] == "2025-11-25"),
        "{output}"
    );
    // The seal failure is explained, by its reason only.
    assert!(output.contains("requestState rejected"), "{output}");

    for secret in [SECRET, ANSWER, ARGUMENT, state.as_str()] {
        assert!(
            !output.contains(secret),
            "{secret:?} appears in the trace:\n{output}"
        );
    }
    // No piece of the sealed state either (a log that printed part of it would still leak).
    for window in state.as_bytes().windows(24).step_by(12) {
        let piece = std::str::from_utf8(window).unwrap();
        assert!(
            !output.contains(piece),
            "part of the state appears: {piece}"
        );
    }
}

const ITEM: &str = "kumquat-secret-item";

#[derive(serde::Serialize, Deserialize)]
struct Basket {
    items: Vec<String>,
}

impl mcp_server_core::HandleKind for Basket {
    const KIND: &'static str = "basket";
}

#[derive(Deserialize, JsonSchema)]
struct StartArgs {
    item: String,
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    basket: mcp_server_core::Handle<Basket>,
}

/// Issue #34: a sealed handle's value and the handle itself stay out of every log line at
/// every level, through sealing, opening, a tampered handle's refusal and the audit layer.
#[tokio::test]
async fn handles_and_their_values_never_reach_the_trace() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::TRACE)
        .with_current_span(true)
        .with_span_list(true)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let start =
        ToolDef::new("start")
            .arguments::<StartArgs>()
            .handler(|ctx, args: StartArgs| async move {
                let handle = ctx.seal_handle(&Basket {
                    items: vec![args.item],
                });
                handle.map(|h| h.as_str().to_owned()).map_err(|e| e.message)
            });
    let count =
        ToolDef::new("count")
            .arguments::<CountArgs>()
            .handler(|ctx, args: CountArgs| async move {
                match args.basket.open(&ctx).await {
                    Ok(basket) => Ok(format!("{} item(s)", basket.items.len())),
                    Err(refusal) => Err(refusal.0.message),
                }
            });
    let service = McpServer::new("traced")
        .tool(start)
        .tool(count)
        .layer(mcp_server_core::policy::Audit::to_tracing())
        .request_state_security(RequestStateSecurity::keys([SECRET]).unwrap())
        .into_service()
        .unwrap();
    let mut client = TestClient::new(&service);
    let started = client
        .modern(
            "tools/call",
            json!({"name": "start", "arguments": {"item": ITEM}}),
            json!({}),
        )
        .await;
    let handle = started["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned();
    assert!(!handle.contains(ITEM), "{handle}");
    let counted = client
        .modern(
            "tools/call",
            json!({"name": "count", "arguments": {"basket": handle}}),
            json!({}),
        )
        .await;
    assert_eq!(
        counted["result"]["content"][0]["text"], "1 item(s)",
        "{counted}"
    );
    let mut bytes = handle.clone().into_bytes();
    let middle = bytes.len() / 2;
    bytes[middle] = if bytes[middle] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    let refused = client
        .modern(
            "tools/call",
            json!({"name": "count", "arguments": {"basket": tampered}}),
            json!({}),
        )
        .await;
    assert_eq!(
        refused["result"]["content"][0]["text"], "Invalid or expired handle",
        "{refused}"
    );
    drop(_guard);

    let output = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert_eq!(
        output.matches("\"target\":\"mcp::audit\"").count(),
        3,
        "{output}"
    );
    for secret in [SECRET, ITEM, handle.as_str(), tampered.as_str()] {
        assert!(
            !output.contains(secret),
            "{secret:?} appears in the trace:\n{output}"
        );
    }
    for window in handle.as_bytes().windows(24).step_by(12) {
        let piece = std::str::from_utf8(window).unwrap();
        assert!(
            !output.contains(piece),
            "part of the handle appears: {piece}"
        );
    }
}

/// Security review X5: a client's JSON-RPC id and method reach a text log escaped, quoted and
/// bounded. An id carrying a newline and a terminal escape cannot forge an audit line for
/// another user or reach the terminal of whoever tails the log.
#[tokio::test]
async fn a_request_id_cannot_forge_a_log_line_or_reach_the_terminal() {
    let captured = Captured::default();
    let writer = captured.clone();
    // What a default text subscriber writes, span context included.
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let greet = ToolDef::new("greet").handler(|_ctx, _: JsonObject| async move {
        tracing::info!("greeting");
        "hello"
    });
    let service = McpServer::new("traced")
        .tool(greet)
        .layer(mcp_server_core::policy::Audit::to_tracing())
        .into_service()
        .unwrap();
    let mut client = TestClient::new(&service);
    let forged =
        "1\nZ  INFO mcp::audit: audit id=7 subject=\"bob\" outcome=complete\n\u{1b}]0;owned\u{7}";
    let id = json!(forged);
    let params = common::with_meta(json!({"name": "greet", "arguments": {}}), json!({}));
    let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let replies = client.exchange_raw(&request.to_string(), &id).await;
    let answer = replies.last().unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "hello", "{answer}");
    drop(_guard);

    let output = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        !output.contains('\u{1b}') && !output.contains('\u{7}'),
        "{output}"
    );
    let lines: Vec<&str> = output.lines().collect();
    // Two events, one line each: the tool's, inside the request span, and the audit record.
    assert_eq!(lines.len(), 2, "{output}");
    let escaped = r#""1\nZ  INFO mcp::audit: audit id=7 subject=\"bob\" outcome=complete\n\u{1b}]0;owned\u{7}""#;
    assert!(lines[0].contains("greeting"), "{output}");
    assert!(
        lines[0].contains(&format!("jsonrpc.request.id={escaped}")),
        "{output}"
    );
    assert!(lines[1].contains("mcp::audit"), "{output}");
    assert!(lines[1].contains(&format!("id={escaped}")), "{output}");
    assert!(lines[1].contains(r#"method="tools/call""#), "{output}");
    assert!(!output.contains("subject=\"bob\" outcome"), "{output}");
}
