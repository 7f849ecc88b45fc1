//! Each fault the proxy injects, checked on the wire: what reaches the client (read from a
//! raw socket, so no client library hides a missing byte) and whether the server ran the call.
//! The client's and `mcp-term`'s network tests trust these faults to happen; a fault that
//! silently did nothing would let them pass for the wrong reason.

use std::time::{Duration, Instant};

use mcp_faults::{Fault, Harness, Rule};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What one request got back: every byte until the connection ended or `quiet` passed
/// without one, and which of the two happened.
struct Reply {
    bytes: Vec<u8>,
    closed: bool,
}

impl Reply {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    fn status(&self) -> Option<u16> {
        let text = self.text();
        let line = text.lines().next()?;
        line.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
    }

    fn header(&self, name: &str) -> Option<String> {
        let text = self.text();
        let head = text.split("\r\n\r\n").next()?;
        head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    }

    fn body(&self) -> String {
        let text = self.text();
        text.split_once("\r\n\r\n")
            .map(|(_, body)| body.to_owned())
            .unwrap_or_default()
    }

    /// The `data:` lines of the SSE events in the body, in order.
    fn events(&self) -> Vec<Value> {
        self.body()
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str(data.trim()).ok())
            .collect()
    }
}

/// A 2026-07-28 `tools/call` of `tool`, with a progress token when `progress` (so the server
/// answers with an SSE stream: the progress notifications, then the result).
fn call(tool: &str, arguments: Value, progress: bool) -> String {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    if progress {
        meta["progressToken"] = json!("p");
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments, "_meta": meta}})
    .to_string()
}

/// POSTs `body` to the proxy on a fresh connection (HTTP/1.1, `Connection: close`) and reads
/// until the connection ends, or until nothing has come for `quiet`.
async fn post(harness: &Harness, tool: &str, body: &str, quiet: Duration) -> Reply {
    let url = harness.url();
    let authority = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_owned();
    let path = url
        .strip_prefix("http://")
        .and_then(|rest| rest.find('/').map(|at| rest[at..].to_owned()))
        .unwrap_or_else(|| "/".to_owned());
    let mut stream = TcpStream::connect(&authority).await.unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: {tool}\r\nConnection: close\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match tokio::time::timeout(quiet, stream.read(&mut buffer)).await {
            Err(_) => {
                return Reply {
                    bytes,
                    closed: false,
                };
            }
            Ok(Ok(0) | Err(_)) => {
                return Reply {
                    bytes,
                    closed: true,
                };
            }
            Ok(Ok(n)) => bytes.extend_from_slice(&buffer[..n]),
        }
    }
}

const QUIET: Duration = Duration::from_secs(5);

/// `set {"key": "a"}`, the idempotent tool most faults are tried on.
async fn set(harness: &Harness) -> Reply {
    post(
        harness,
        "set",
        &call("set", json!({"key": "a"}), false),
        QUIET,
    )
    .await
}

#[tokio::test]
async fn with_no_fault_the_call_passes_through() {
    let harness = Harness::start().await;
    let reply = set(&harness).await;
    assert!(reply.closed);
    assert_eq!(reply.status(), Some(200), "{}", reply.text());
    assert!(reply.body().contains("set a"), "{}", reply.text());
    assert_eq!(harness.counters.executed("set"), 1);
    assert_eq!(harness.proxy.count_tool("set"), 1);
}

#[tokio::test]
async fn reset_before_forward_closes_with_nothing_and_the_server_never_sees_it() {
    let harness = Harness::start().await;
    harness.fault(Rule::tool("set", Fault::ResetBeforeForward));
    let reply = set(&harness).await;
    assert!(reply.closed && reply.bytes.is_empty(), "{}", reply.text());
    assert_eq!(harness.counters.executed("set"), 0);
    // Once: the next call passes.
    let again = set(&harness).await;
    assert_eq!(again.status(), Some(200), "{}", again.text());
    assert_eq!(harness.counters.executed("set"), 1);
}

#[tokio::test]
async fn reset_after_forward_closes_with_nothing_after_the_server_ran_the_call() {
    let harness = Harness::start().await;
    harness.fault(Rule::tool("charge", Fault::ResetAfterForward));
    let reply = post(&harness, "charge", &call("charge", json!({}), false), QUIET).await;
    assert!(reply.closed && reply.bytes.is_empty(), "{}", reply.text());
    assert_eq!(harness.counters.executed("charge"), 1);
}

#[tokio::test]
async fn drop_mid_stream_passes_the_head_and_the_first_events_then_closes() {
    let harness = Harness::start().await;
    harness.fault(Rule::tool("lookup", Fault::DropMidStream { events: 1 }));
    let arguments = json!({"key": "k", "steps": 3, "step_ms": 20});
    let reply = post(&harness, "lookup", &call("lookup", arguments, true), QUIET).await;
    assert!(reply.closed, "{}", reply.text());
    assert_eq!(reply.status(), Some(200), "{}", reply.text());
    assert_eq!(
        reply.header("content-type").as_deref(),
        Some("text/event-stream")
    );
    let events = reply.events();
    assert_eq!(events.len(), 1, "{}", reply.text());
    assert_eq!(
        events[0]["method"],
        "notifications/progress",
        "{}",
        reply.text()
    );
    assert_eq!(events[0]["params"]["progress"].as_f64(), Some(1.0));
    // The server ran the call to its end; the client never heard the result.
    assert!(!reply.text().contains("value of k"), "{}", reply.text());
    assert_eq!(harness.counters.executed("lookup"), 1);
}

#[tokio::test]
async fn a_stall_passes_the_first_events_then_holds_the_connection_open_and_silent() {
    let harness = Harness::start().await;
    harness.fault(Rule::tool("lookup", Fault::Stall { events: 2 }));
    let arguments = json!({"key": "k", "steps": 3, "step_ms": 20});
    let reply = post(
        &harness,
        "lookup",
        &call("lookup", arguments, true),
        Duration::from_millis(1500),
    )
    .await;
    assert!(!reply.closed, "a stall does not close: {}", reply.text());
    assert_eq!(reply.status(), Some(200), "{}", reply.text());
    let events = reply.events();
    assert_eq!(events.len(), 2, "{}", reply.text());
    assert!(
        events
            .iter()
            .all(|e| e["method"] == "notifications/progress"),
        "{}",
        reply.text()
    );
    assert!(!reply.text().contains("value of k"), "{}", reply.text());
}

#[tokio::test]
async fn session_not_found_answers_404_without_forwarding() {
    let harness = Harness::start().await;
    harness.fault(Rule::tool("set", Fault::SessionNotFound));
    let reply = set(&harness).await;
    assert!(reply.closed);
    assert_eq!(reply.status(), Some(404), "{}", reply.text());
    assert_eq!(harness.counters.executed("set"), 0);
}

#[tokio::test]
async fn a_status_fault_answers_that_status_and_its_retry_after_without_forwarding() {
    let harness = Harness::start().await;
    harness.fault(Rule::tool(
        "set",
        Fault::Status {
            code: 503,
            retry_after: Some(7),
        },
    ));
    harness.fault(Rule::tool(
        "set",
        Fault::Status {
            code: 502,
            retry_after: None,
        },
    ));
    let first = set(&harness).await;
    assert_eq!(first.status(), Some(503), "{}", first.text());
    assert_eq!(first.header("retry-after").as_deref(), Some("7"));
    let second = set(&harness).await;
    assert_eq!(second.status(), Some(502), "{}", second.text());
    assert_eq!(second.header("retry-after"), None);
    assert_eq!(harness.counters.executed("set"), 0);
}

#[tokio::test]
async fn truncate_body_answers_a_complete_message_whose_json_is_cut() {
    let harness = Harness::start().await;
    harness.fault(Rule::tool("set", Fault::TruncateBody { bytes: 10 }));
    let reply = set(&harness).await;
    assert!(reply.closed);
    assert_eq!(reply.status(), Some(200), "{}", reply.text());
    assert_eq!(reply.body().len(), 10, "{}", reply.text());
    assert!(serde_json::from_str::<Value>(&reply.body()).is_err());
    assert_eq!(harness.counters.executed("set"), 1);
}

#[tokio::test]
async fn a_delay_holds_the_request_then_forwards_it() {
    let harness = Harness::start().await;
    harness.fault(Rule::tool("set", Fault::Delay(Duration::from_millis(400))));
    let started = Instant::now();
    let reply = set(&harness).await;
    assert!(started.elapsed() >= Duration::from_millis(400));
    assert_eq!(reply.status(), Some(200), "{}", reply.text());
    assert!(reply.body().contains("set a"), "{}", reply.text());
    assert_eq!(harness.counters.executed("set"), 1);
}

/// A restart starts the new instance before the old one's streams are cut: at the moment of
/// the cut, the proxy already points at an instance that accepts connections. Were the old
/// instance stopped first, a client that sends its request again right after the cut would
/// meet a refused connection (a 502 from the proxy) once or more, depending on how long the
/// old instance takes to stop, and a test counting the sends would fail by chance.
#[tokio::test]
async fn a_restart_listens_anew_before_it_cuts_anything() {
    let harness = Harness::start().await;
    let slot = harness.upstream.addr_slot();
    let before = *slot.lock().unwrap();
    let mut at_cut = None;
    harness
        .upstream
        .restart_then(|| at_cut = Some(*slot.lock().unwrap()))
        .await;
    let at_cut = at_cut.expect("the callback ran");
    assert_ne!(at_cut, before, "the proxy points at the new instance");
    assert_eq!(*slot.lock().unwrap(), at_cut);
    TcpStream::connect(at_cut)
        .await
        .expect("the new instance listens when the cut comes");
}
