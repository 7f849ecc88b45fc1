//! Latency of the exchanges that stream: one at a time, so any stall in delivering a small SSE
//! event (Nagle's algorithm against a delayed ACK, a flush that waits) shows in p50/p99
//! instead of hiding behind throughput.
//!
//! - `legacy_elicitation`: a 2025-11-25 session calls `confirm_echo`; the server asks on the
//!   POST's SSE stream (`elicitation/create`), the answer goes back in a second POST on a
//!   second connection, and the result arrives on the first stream. Timed from the call to
//!   the result.
//! - `sse_call`: a 2026-07-28 `progress_echo` with a `progressToken`: the answer is an SSE
//!   stream with a progress event, then the result. Timed from the call to the result.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;

use crate::{Settings, percentile, text_for, wire};

pub(crate) const LEGACY: &str = "2025-11-25";

pub(crate) async fn open(addr: SocketAddr) -> Result<SendRequest<Full<Bytes>>, String> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("loadgen: latency connection ended: {e}");
        }
    });
    Ok(sender)
}

pub(crate) async fn post(
    sender: &mut SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    headers: &[(&str, &str)],
    body: &Value,
) -> Result<Response<Incoming>, String> {
    let mut request = Request::post("/mcp")
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_string())))
        .map_err(|e| e.to_string())?;
    sender
        .ready()
        .await
        .map_err(|e| format!("connection (before {}): {e}", body["method"]))?;
    sender
        .send_request(request)
        .await
        .map_err(|e| format!("request: {e}"))
}

/// Reads SSE events from a streaming body as they arrive.
struct Events {
    body: Incoming,
    buffer: Vec<u8>,
}

impl Events {
    fn new(response: Response<Incoming>) -> Result<Self, String> {
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if response.status() != StatusCode::OK || !content_type.starts_with("text/event-stream") {
            return Err(format!(
                "expected a 200 SSE stream, got {} {content_type:?}",
                response.status()
            ));
        }
        Ok(Self {
            body: response.into_body(),
            buffer: Vec::new(),
        })
    }

    /// The next event's data as JSON (events without data, such as priming events, skipped).
    async fn next(&mut self) -> Result<Value, String> {
        loop {
            if let Some(end) = find_blank_line(&self.buffer) {
                let event: Vec<u8> = self.buffer.drain(..end.1).collect();
                let data = event_data(&event[..end.0]);
                if data.is_empty() {
                    continue;
                }
                return serde_json::from_str(&data).map_err(|e| format!("event data: {e}"));
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buffer.extend_from_slice(&data);
                    }
                }
                Some(Err(e)) => return Err(format!("stream: {e}")),
                None => return Err("the stream ended before the result".into()),
            }
        }
    }
}

/// The end of the first event in `buffer`: (where its text ends, where the next begins).
fn find_blank_line(buffer: &[u8]) -> Option<(usize, usize)> {
    let mut at = 0;
    while at < buffer.len() {
        let rest = &buffer[at..];
        if rest.starts_with(b"\r\n\r\n") {
            return Some((at, at + 4));
        }
        if rest.starts_with(b"\n\n") {
            return Some((at, at + 2));
        }
        at += 1;
    }
    None
}

fn event_data(event: &[u8]) -> String {
    let text = String::from_utf8_lossy(event);
    let mut data = String::new();
    for line in text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)) {
        if let Some(rest) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        }
    }
    data
}

/// A 2025-11-25 session: `initialize`, `notifications/initialized`; returns its id.
pub(crate) async fn legacy_session(
    sender: &mut SendRequest<Full<Bytes>>,
    addr: SocketAddr,
) -> Result<String, String> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY,
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "loadgen", "version": "0.0.0"}
    }});
    let response = post(sender, addr, &[], &init).await?;
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or("initialize answered without Mcp-Session-Id")?;
    response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("initialize body: {e}"))?;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", LEGACY),
    ];
    let response = post(sender, addr, &headers, &initialized).await?;
    if response.status() != StatusCode::ACCEPTED {
        return Err(format!(
            "notifications/initialized: HTTP {}",
            response.status()
        ));
    }
    response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?;
    Ok(session)
}

/// One legacy elicitation round trip, checked.
async fn legacy_round(
    call: &mut SendRequest<Full<Bytes>>,
    answer: &mut SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    session: &str,
    id: u64,
) -> Result<(), String> {
    let text = text_for(id);
    let headers = [
        ("mcp-session-id", session),
        ("mcp-protocol-version", LEGACY),
    ];
    let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "confirm_echo", "arguments": {"text": text}}});
    let mut events = Events::new(post(call, addr, &headers, &request).await?)?;
    let ask = events.next().await?;
    if ask["method"] != "elicitation/create" {
        return Err(format!("expected elicitation/create first, got {ask}"));
    }
    let reply = json!({"jsonrpc": "2.0", "id": ask["id"].clone(),
        "result": {"action": "accept", "content": {"ok": true}}});
    let response = post(answer, addr, &headers, &reply).await?;
    if response.status() != StatusCode::ACCEPTED {
        return Err(format!("the answer got HTTP {}", response.status()));
    }
    response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?;
    loop {
        let message = events.next().await?;
        if message.get("id").is_some() {
            wire::check_message(&message, id, &text, false)?;
            // Drain the end of the stream, or hyper drops the connection with the unread body
            // and the next round finds it closed (a race the one-thread runtime lost every
            // time right after the 64-connection level).
            while let Some(frame) = events.body.frame().await {
                frame.map_err(|e| format!("stream: {e}"))?;
            }
            return Ok(());
        }
    }
}

/// One 2026-07-28 call answered as an SSE stream (a progress event, then the result), checked.
async fn sse_round(
    sender: &mut SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    id: u64,
) -> Result<(), String> {
    let text = text_for(id);
    let mut body: Value =
        serde_json::from_slice(&wire::call_body(id, "progress_echo", &text, None))
            .map_err(|e| e.to_string())?;
    body["params"]["_meta"]["progressToken"] = json!(id);
    let headers = [
        ("mcp-protocol-version", wire::VERSION),
        ("mcp-method", "tools/call"),
        ("mcp-name", "progress_echo"),
    ];
    let mut events = Events::new(post(sender, addr, &headers, &body).await?)?;
    let mut progress = false;
    loop {
        let message = events.next().await?;
        if message["method"] == "notifications/progress" {
            progress = true;
        } else if message.get("id").is_some() {
            if !progress {
                return Err("the result came without the progress event before it".into());
            }
            wire::check_message(&message, id, &text, false)?;
            // Drain the end of the stream so the connection is free for the next call.
            while let Some(frame) = events.body.frame().await {
                frame.map_err(|e| format!("stream: {e}"))?;
            }
            return Ok(());
        }
    }
}

fn summary(latencies: &mut [u32], secs: f64) -> Value {
    latencies.sort_unstable();
    let over = |ms: u32| latencies.iter().filter(|l| **l >= ms * 1000).count();
    json!({
        "rounds": latencies.len(),
        "secs": secs,
        "p50_us": percentile(latencies, 50.0),
        "p90_us": percentile(latencies, 90.0),
        "p99_us": percentile(latencies, 99.0),
        "max_us": latencies.last().copied().unwrap_or(0),
        "over_20ms": over(20),
    })
}

/// The warm-up, then the measured window, of back-to-back rounds.
struct Window {
    warmup: Duration,
    secs: Duration,
    start: Instant,
    measuring: Option<Instant>,
    latencies: Vec<u32>,
}

impl Window {
    fn new(settings: &Settings) -> Self {
        Self {
            warmup: settings.warmup,
            secs: settings.secs,
            start: Instant::now(),
            measuring: None,
            latencies: Vec::new(),
        }
    }

    /// Whether to run another round.
    fn more(&mut self) -> bool {
        match self.measuring {
            None if self.start.elapsed() >= self.warmup => {
                self.measuring = Some(Instant::now());
                true
            }
            None => true,
            Some(since) => since.elapsed() < self.secs,
        }
    }

    /// Records a round that started at `t` (warm-up rounds are not kept).
    fn record(&mut self, t: Instant) {
        if self.measuring.is_some_and(|since| t >= since) {
            self.latencies
                .push(t.elapsed().as_micros().min(u32::MAX as u128) as u32);
        }
    }

    fn finish(mut self) -> Value {
        let secs = self.measuring.map_or(0.0, |s| s.elapsed().as_secs_f64());
        summary(&mut self.latencies, secs)
    }
}

/// Both latency figures against a server already listening at `addr`.
pub async fn suite(addr: SocketAddr, settings: &Settings) -> Result<Value, String> {
    let mut id = 1_000;
    let mut call = open(addr).await?;
    let mut answer = open(addr).await?;
    let session = legacy_session(&mut call, addr).await?;
    let mut window = Window::new(settings);
    while window.more() {
        id += 1;
        let t = Instant::now();
        legacy_round(&mut call, &mut answer, addr, &session, id).await?;
        window.record(t);
    }
    let legacy = window.finish();
    let mut sender = open(addr).await?;
    let mut window = Window::new(settings);
    while window.more() {
        id += 1;
        let t = Instant::now();
        sse_round(&mut sender, addr, id).await?;
        window.record(t);
    }
    Ok(json!({"legacy_elicitation": legacy, "sse_call": window.finish()}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_split_at_blank_lines() {
        let buffer = b"id: 1\ndata: {\"a\":1}\n\ndata: x";
        let (end, next) = find_blank_line(buffer).unwrap();
        assert_eq!(event_data(&buffer[..end]), "{\"a\":1}");
        assert_eq!(&buffer[next..], b"data: x");
        assert!(find_blank_line(b"data: x\r\n").is_none());
    }
}
