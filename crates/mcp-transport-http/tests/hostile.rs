//! The client transport against servers that misbehave on purpose or by accident, scripted at
//! the byte level over a raw socket: SSE frames that split a UTF-8 character, answers larger
//! than the transport's limit, an endless SSE event, a huge `retry:`.

use std::time::Duration;

use mcp_client::Transport;
use mcp_transport_http::HttpTransport;
use mcp_types::{JsonRpcMessage, JsonRpcRequest};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Reads one HTTP/1.1 request (head and `Content-Length` body) and returns its head.
async fn read_request(socket: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the client closed before sending a request");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = socket.read(&mut chunk).await.unwrap();
        assert!(n > 0);
        buf.extend_from_slice(&chunk[..n]);
    }
    head
}

/// A one-connection server that answers the first request with `head` and then each of
/// `chunks` as its own HTTP chunk, flushed and spaced so the client reads them one by one.
async fn scripted(head: &'static str, chunks: Vec<Vec<u8>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        read_request(&mut socket).await;
        socket.write_all(head.as_bytes()).await.unwrap();
        for chunk in chunks {
            let framed = [
                format!("{:x}\r\n", chunk.len()).into_bytes(),
                chunk,
                b"\r\n".to_vec(),
            ]
            .concat();
            if socket.write_all(&framed).await.is_err() {
                return;
            }
            socket.flush().await.unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = socket.write_all(b"0\r\n\r\n").await;
        // Keep the socket open until the client has read everything.
        let mut rest = Vec::new();
        let _ = socket.read_to_end(&mut rest).await;
    });
    url
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
const JSON_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";

fn ping(id: i64) -> JsonRpcMessage {
    JsonRpcMessage::Request(JsonRpcRequest::new(id, "ping", &json!({})).unwrap())
}

fn result_of(message: JsonRpcMessage) -> Value {
    match message {
        JsonRpcMessage::Response(r) => serde_json::from_str(r.result.get()).unwrap(),
        other => panic!("expected a response, got {other}"),
    }
}

fn error_of(message: JsonRpcMessage) -> String {
    match message {
        JsonRpcMessage::Error(e) => e.error.message,
        other => panic!("expected an error, got {other}"),
    }
}

#[tokio::test]
async fn a_character_split_between_two_sse_frames_is_not_corrupted() {
    let event = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"text\":\"café ☕\"}}\n\n";
    let bytes = event.as_bytes();
    // Split inside "é" (C3 | A9) and inside "☕" (E2 98 | 95).
    let e_at = event.find('é').unwrap() + 1;
    let cup_at = event.find('☕').unwrap() + 2;
    let chunks = vec![
        bytes[..e_at].to_vec(),
        bytes[e_at..cup_at].to_vec(),
        bytes[cup_at..].to_vec(),
    ];
    let url = scripted(SSE_HEAD, chunks).await;
    let transport = HttpTransport::new(&url).unwrap();
    transport.send(ping(1)).await.unwrap();
    let answer = result_of(transport.receive().await.unwrap());
    assert_eq!(answer, json!({"text": "café ☕"}));
}

#[tokio::test]
async fn a_json_answer_over_the_limit_fails_its_request() {
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(4096)
    );
    let chunks = big.into_bytes().chunks(1000).map(<[u8]>::to_vec).collect();
    let url = scripted(JSON_HEAD, chunks).await;
    let transport = HttpTransport::new(&url).unwrap().max_message_size(1024);
    transport.send(ping(1)).await.unwrap();
    assert_eq!(
        error_of(transport.receive().await.unwrap()),
        "the server's answer is larger than the 1024-byte limit (HttpTransport::max_message_size)"
    );
}

#[tokio::test]
async fn an_sse_event_that_never_ends_fails_its_request_at_the_limit() {
    // 64 chunks of 1000 bytes, no blank line: the event outgrows a 16-KiB limit.
    let mut chunks = vec![b"data: ".to_vec()];
    chunks.extend((0..64).map(|_| vec![b'x'; 1000]));
    let url = scripted(SSE_HEAD, chunks).await;
    let transport = HttpTransport::new(&url)
        .unwrap()
        .max_message_size(16 * 1024);
    transport.send(ping(1)).await.unwrap();
    assert_eq!(
        error_of(transport.receive().await.unwrap()),
        "the server sent an SSE event larger than the 16384-byte limit \
         (HttpTransport::max_message_size); the stream was abandoned"
    );
}

/// A server that streams notifications faster than the client reads them cannot grow the
/// client's memory: once `INCOMING_QUEUE` messages wait, the transport stops reading the
/// stream and the server's writes wait on TCP (before, every event was queued at once and the
/// server finished writing all of them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_flooding_an_sse_stream_waits_for_the_client_instead_of_filling_its_memory() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    // 20,000 events of about 1 KiB: 20 MiB, far more than the sockets' buffers and the queue.
    const EVENTS: usize = 20_000;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let finished = Arc::new(AtomicBool::new(false));
    let done = finished.clone();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        read_request(&mut socket).await;
        socket.write_all(SSE_HEAD.as_bytes()).await.unwrap();
        let event = format!(
            "data: {}\n\n",
            json!({"jsonrpc": "2.0", "method": "notifications/message",
                   "params": {"level": "info", "data": "x".repeat(1000)}})
        );
        let framed = format!("{:x}\r\n{event}\r\n", event.len());
        for _ in 0..EVENTS {
            if socket.write_all(framed.as_bytes()).await.is_err() {
                return;
            }
        }
        done.store(true, Ordering::SeqCst);
        let _ = socket.write_all(b"0\r\n\r\n").await;
        let mut rest = Vec::new();
        let _ = socket.read_to_end(&mut rest).await;
    });
    let transport = HttpTransport::new(&url).unwrap();
    transport.send(ping(1)).await.unwrap();
    // Nobody reads for a while: the server must not be able to write the whole stream.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !finished.load(Ordering::SeqCst),
        "the server wrote all {EVENTS} events while nobody read them: they were queued"
    );
    // Reading lets it go on; every event arrives.
    for n in 0..EVENTS {
        let message = tokio::time::timeout(Duration::from_secs(10), transport.receive())
            .await
            .expect("no message within 10 s")
            .expect("the stream ended early");
        assert!(
            matches!(&message, JsonRpcMessage::Notification(n) if n.method == "notifications/message"),
            "message {n}: {message}"
        );
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !finished.load(Ordering::SeqCst) {
        assert!(
            std::time::Instant::now() < deadline,
            "the stream never finished"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
