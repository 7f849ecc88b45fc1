//! The stdio server's limits: a line over the cap is refused and the stream still served, a
//! peer that stops reading stdout stops the server reading (nothing lost, nothing piled up),
//! and end of input ends the server even with a `subscriptions/listen` open.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_server_core::registry::{McpServer, ToolDef};
use mcp_server_core::{Service, SessionLimits};
use mcp_transport_stdio::{StdioLimits, serve_io_with};
use mcp_types::JsonObject;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn service(calls: Arc<AtomicUsize>, max_in_flight: usize) -> Service {
    let mut limits = SessionLimits::default();
    limits.max_in_flight = max_in_flight;
    McpServer::new("Stdio limits")
        .session_limits(limits)
        .tool(ToolDef::new("count").handler(move |_c, _a: JsonObject| {
            let calls = calls.clone();
            async move { calls.fetch_add(1, Ordering::SeqCst).to_string() }
        }))
        .into_service()
        .unwrap()
}

fn envelope() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}})
}

fn call(id: usize) -> String {
    let line = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "count", "arguments": {}, "_meta": envelope()}});
    format!("{line}\n")
}

#[tokio::test]
async fn a_line_over_the_cap_is_refused_and_the_next_is_served() {
    let (mut client, server) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server);
    let limits = StdioLimits {
        max_line: 1024,
        ..StdioLimits::default()
    };
    let serving = tokio::spawn(serve_io_with(
        service(Arc::default(), 16),
        read,
        write,
        limits,
    ));
    let mut long = vec![b'x'; 5000];
    long.push(b'\n');
    client.write_all(&long).await.unwrap();
    client.write_all(call(1).as_bytes()).await.unwrap();
    let mut lines = BufReader::new(&mut client).lines();
    let refused: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(
        refused,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600,
            "message": "The message exceeds the 1024-byte line limit"}})
    );
    let served: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(served["id"], 1);
    assert_eq!(served["result"]["content"][0]["text"], "0");
    drop(lines);
    drop(client);
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_peer_that_stops_reading_stops_the_server_reading_and_loses_nothing() {
    let calls = Arc::new(AtomicUsize::new(0));
    // Small pipes both ways, so neither side can buffer much.
    let (mut client_write, server_read) = tokio::io::duplex(512);
    let (server_write, client_read) = tokio::io::duplex(512);
    let limits = StdioLimits {
        output_queue: 2,
        ..StdioLimits::default()
    };
    let serving = tokio::spawn(serve_io_with(
        service(calls.clone(), 4),
        server_read,
        server_write,
        limits,
    ));
    let total = 200;
    let writer = tokio::spawn(async move {
        for id in 0..total {
            client_write.write_all(call(id).as_bytes()).await.unwrap();
        }
        client_write
    });
    // Nobody reads stdout for a while: the server must stop taking work, not queue it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let handled = calls.load(Ordering::SeqCst);
    assert!(
        handled < 20,
        "{handled} calls ran while stdout was not read (in-flight cap 4, queue 2)"
    );
    // Reading again drains every answer, none lost.
    let mut lines = BufReader::new(client_read).lines();
    let mut ids = Vec::new();
    while ids.len() < total {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let message: Value = serde_json::from_str(&line).unwrap();
        ids.push(message["id"].as_u64().unwrap());
    }
    ids.sort_unstable();
    assert_eq!(ids, (0..total as u64).collect::<Vec<_>>());
    drop(writer.await.unwrap());
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn end_of_input_ends_the_server_with_a_listen_open() {
    let (mut client, read) = tokio::io::duplex(64 * 1024);
    let (write, client_read) = tokio::io::duplex(64 * 1024);
    let serving = tokio::spawn(serve_io_with(
        service(Arc::default(), 16),
        read,
        write,
        StdioLimits::default(),
    ));
    let listen = json!({"jsonrpc": "2.0", "id": "l", "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true}, "_meta": envelope()}});
    client
        .write_all(format!("{listen}\n").as_bytes())
        .await
        .unwrap();
    let mut lines = BufReader::new(client_read).lines();
    let ack: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    drop(client);
    // `serve_io` returns (it used to wait forever for the listen to end).
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the server did not exit at end of input")
        .unwrap()
        .unwrap();
}
