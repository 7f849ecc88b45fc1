//! Zero-downtime restarts: once told to stop, `serve_with_shutdown` refuses new connections,
//! answers readiness with 503, still serves requests arriving on connections it already had
//! (each answer marked `Connection: close`), answers requests in flight, ends session GET
//! streams, and returns once every connection has closed.

mod common;

use common::{Running, start};
use std::sync::Arc;
use std::time::Duration;

use mcp_server_core::Service;
use mcp_server_core::registry::{McpServer, ToolDef};
use mcp_transport_http::McpHttpService;
use mcp_types::JsonObject;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Notify, Semaphore};

/// `echo` answers at once; `gate` reports progress (when asked to) and answers once the test
/// adds a permit to `gate`.
fn service(started: Arc<Notify>, gate: Arc<Semaphore>) -> Service {
    let echo = ToolDef::new("echo").handler(|_ctx, a: JsonObject| async move {
        a.get("text")
            .and_then(|t| t.as_str())
            .unwrap_or("")
            .to_owned()
    });
    let gated = ToolDef::new("gate").handler(move |ctx, _a: JsonObject| {
        let started = started.clone();
        let gate = gate.clone();
        async move {
            // A first message on its stream, when the caller asked for progress.
            ctx.progress(0.0, None, Some("at the gate")).await;
            started.notify_one();
            let _permit = gate.acquire().await;
            "opened"
        }
    });
    McpServer::new("Drain")
        .tool(echo)
        .tool(gated)
        .into_service()
        .unwrap()
}

impl Running {
    /// Tells the server to stop and waits until it no longer accepts connections.
    async fn begin_drain(&mut self) {
        let _ = self.stop.take().unwrap().send(());
        for _ in 0..500 {
            if TcpStream::connect(("127.0.0.1", self.port)).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the draining server still accepts connections");
    }

    /// The server returns well before its (long) drain grace: every connection closed.
    async fn finished(self) {
        tokio::time::timeout(Duration::from_secs(20), self.done)
            .await
            .expect("the drain waited for its whole grace with no connection open")
            .unwrap()
            .unwrap();
    }
}

/// One HTTP/1.1 response read from a keep-alive connection: status line, lowercased headers,
/// body (by `content-length`).
struct Answer {
    status: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

async fn read_answer(stream: &mut TcpStream) -> Answer {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .expect("no answer")
            .unwrap();
        assert!(
            n > 0,
            "the connection closed before an answer: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map(|(_, v)| v.parse().unwrap())
        .expect("a content-length");
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .expect("the body did not arrive")
            .unwrap();
        assert!(n > 0, "the connection closed inside the body");
        body.extend_from_slice(&chunk[..n]);
    }
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

fn get(port: u16, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\n").into_bytes()
}

fn modern_call(port: u16, tool: &str, arguments: serde_json::Value) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
         accept: application/json\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\n\
         mcp-name: {tool}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Reads until the peer closes; panics if more bytes arrive.
async fn closes(stream: &mut TcpStream) {
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut rest))
        .await
        .expect("the server kept the connection open after Connection: close")
        .unwrap();
    assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
}

#[tokio::test]
async fn readiness_answers_ready_and_only_to_get() {
    let mut server = start(McpHttpService::new(service(
        Arc::default(),
        Arc::new(Semaphore::new(0)),
    )))
    .await;
    let mut stream = TcpStream::connect(("127.0.0.1", server.port))
        .await
        .unwrap();
    stream.write_all(&get(server.port, "/ready")).await.unwrap();
    let answer = read_answer(&mut stream).await;
    assert_eq!(
        (answer.status.as_str(), answer.body.as_str()),
        ("HTTP/1.1 200 OK", "ready")
    );
    assert_eq!(answer.header("connection"), None);
    let post = format!(
        "POST /ready HTTP/1.1\r\nhost: 127.0.0.1:{}\r\ncontent-length: 0\r\n\r\n",
        server.port
    );
    stream.write_all(post.as_bytes()).await.unwrap();
    let answer = read_answer(&mut stream).await;
    assert_eq!(answer.status, "HTTP/1.1 405 Method Not Allowed");
    assert_eq!(answer.header("allow"), Some("GET, HEAD"));
    drop(stream);
    server.begin_drain().await;
    server.finished().await;

    // Turned off, the path is nobody's.
    let mut server = start(
        McpHttpService::new(service(Arc::default(), Arc::new(Semaphore::new(0))))
            .readiness_path(None),
    )
    .await;
    let mut stream = TcpStream::connect(("127.0.0.1", server.port))
        .await
        .unwrap();
    stream.write_all(&get(server.port, "/ready")).await.unwrap();
    assert_eq!(
        read_answer(&mut stream).await.status,
        "HTTP/1.1 404 Not Found"
    );
    drop(stream);
    server.begin_drain().await;
    server.finished().await;
}

#[tokio::test]
async fn a_draining_server_still_answers_on_open_connections_each_time_with_connection_close() {
    // A grace far longer than the test: the drain must end because the connections closed.
    let endpoint = McpHttpService::new(service(Arc::default(), Arc::new(Semaphore::new(0))))
        .drain_grace(Duration::from_secs(600));
    let mut server = start(endpoint).await;
    let port = server.port;
    // Two keep-alive connections, each served once and left idle, as a load balancer's pool.
    let mut pooled = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream.write_all(&get(port, "/ready")).await.unwrap();
        assert_eq!(read_answer(&mut stream).await.status, "HTTP/1.1 200 OK");
        pooled.push(stream);
    }
    server.begin_drain().await;

    // A POST sent on an idle pooled connection after the drain began is answered, not reset.
    let mut first = pooled.remove(0);
    first
        .write_all(&modern_call(port, "echo", json!({"text": "still here"})))
        .await
        .unwrap();
    let answer = read_answer(&mut first).await;
    assert_eq!(answer.status, "HTTP/1.1 200 OK", "{}", answer.body);
    assert_eq!(answer.header("connection"), Some("close"));
    let result: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(
        result["result"]["content"][0]["text"], "still here",
        "{result}"
    );
    closes(&mut first).await;

    // Readiness now says draining, so a health-checking load balancer stops sending.
    let mut second = pooled.remove(0);
    second.write_all(&get(port, "/ready")).await.unwrap();
    let answer = read_answer(&mut second).await;
    assert_eq!(
        (answer.status.as_str(), answer.body.as_str()),
        ("HTTP/1.1 503 Service Unavailable", "draining")
    );
    assert_eq!(answer.header("connection"), Some("close"));
    closes(&mut second).await;

    server.finished().await;
}

/// A server whose `gate` tool waits for the test (`started` once it runs), draining for at
/// most far longer than any test: a drain that ends, ends because nothing is left.
async fn gated_server() -> (Arc<Notify>, Arc<Semaphore>, Running) {
    let started = Arc::new(Notify::new());
    let gate = Arc::new(Semaphore::new(0));
    let endpoint = McpHttpService::new(service(started.clone(), gate.clone()))
        .drain_grace(Duration::from_secs(600));
    (started, gate, start(endpoint).await)
}

#[tokio::test]
async fn a_request_in_flight_when_the_drain_begins_gets_its_answer() {
    let (started, gate, mut server) = gated_server().await;
    let port = server.port;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream
        .write_all(&modern_call(port, "gate", json!({})))
        .await
        .unwrap();
    started.notified().await;
    server.begin_drain().await;
    gate.add_permits(1);
    let answer = read_answer(&mut stream).await;
    assert_eq!(answer.status, "HTTP/1.1 200 OK", "{}", answer.body);
    assert_eq!(answer.header("connection"), Some("close"));
    assert!(answer.body.contains("\"opened\""), "{}", answer.body);
    closes(&mut stream).await;
    server.finished().await;
}

/// Issue #48: a 2025-11-25 call whose client cut its stream runs on, detached (its result
/// goes to the SSE history); the drain waits for it as for one whose connection is open.
/// Before, the drain ended with the last connection, and the process exited under such a
/// call (one waiting for the answer to its question, say: the answer then found no one).
#[tokio::test]
async fn a_detached_legacy_call_holds_the_drain_until_it_ends() {
    let (started, gate, mut server) = gated_server().await;
    let port = server.port;
    let post = |session: Option<&str>, body: String| {
        let session = session.map_or(String::new(), |s| format!("mcp-session-id: {s}\r\n"));
        format!(
            "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\n{session}content-length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream.write_all(post(None, init).as_bytes()).await.unwrap();
    let answer = read_answer(&mut stream).await;
    let session = answer.header("mcp-session-id").unwrap().to_owned();
    drop(stream);
    // The call starts and streams its progress; its client reads that much and goes away,
    // as one that lost its connection mid-call: the call runs on.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "gate", "arguments": {}, "_meta": {"progressToken": "t"}}})
    .to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream
        .write_all(post(Some(&session), call).as_bytes())
        .await
        .unwrap();
    started.notified().await;
    let mut seen = Vec::new();
    let mut chunk = [0u8; 1024];
    while !String::from_utf8_lossy(&seen).contains("notifications/progress") {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .expect("no progress on the call's stream")
            .unwrap();
        assert!(n > 0, "{:?}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&chunk[..n]);
    }
    drop(stream);
    server.begin_drain().await;
    // No connection is open, and the call still runs: the drain goes on.
    assert!(
        tokio::time::timeout(Duration::from_millis(500), &mut server.done)
            .await
            .is_err(),
        "the drain ended while a detached call still ran"
    );
    // The call ends: so does the drain.
    gate.add_permits(1);
    server.finished().await;
}

#[tokio::test]
async fn a_session_get_stream_ends_when_the_drain_begins() {
    let endpoint = McpHttpService::new(service(Arc::default(), Arc::new(Semaphore::new(0))))
        .drain_grace(Duration::from_secs(600));
    let mut server = start(endpoint).await;
    let port = server.port;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream
        .write_all(
            format!(
                "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
                 accept: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{init}",
                init.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let answer = read_answer(&mut stream).await;
    let session = answer.header("mcp-session-id").unwrap().to_owned();
    drop(stream);
    let mut get_stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    get_stream
        .write_all(
            format!(
                "GET /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\naccept: text/event-stream\r\n\
                 mcp-session-id: {session}\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut head = [0u8; 512];
    let n = get_stream.read(&mut head).await.unwrap();
    assert!(head[..n].starts_with(b"HTTP/1.1 200 OK"));
    server.begin_drain().await;
    // The stream's chunked body ends (`0\r\n\r\n`); the connection is the client's again.
    let mut rest = Vec::new();
    let mut chunk = [0u8; 512];
    while !rest.ends_with(b"0\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), get_stream.read(&mut chunk))
            .await
            .expect("the GET stream outlived the start of the drain")
            .unwrap();
        assert!(n > 0, "closed before the end of the stream");
        rest.extend_from_slice(&chunk[..n]);
    }
    drop(get_stream);
    server.finished().await;
}

#[tokio::test]
async fn session_ids_start_with_the_configured_prefix() {
    let endpoint = McpHttpService::new(service(Arc::default(), Arc::new(Semaphore::new(0))))
        .session_id_prefix("i2- \u{e9}");
    let mut server = start(endpoint).await;
    let port = server.port;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream
        .write_all(
            format!(
                "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
                 accept: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{init}",
                init.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let answer = read_answer(&mut stream).await;
    let id = answer.header("mcp-session-id").unwrap();
    // Space and non-ASCII are dropped from the prefix; 32 hex digits follow.
    let rest = id.strip_prefix("i2-").unwrap_or_else(|| panic!("{id}"));
    assert_eq!(rest.len(), 32, "{id}");
    assert!(rest.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    drop(stream);
    server.begin_drain().await;
    server.finished().await;
}
