//! Memory held per idle 2025-11-25 session and per open SSE stream.
//!
//! After the idle RSS is read, `--sessions N` legacy sessions are opened (`initialize`, then
//! `notifications/initialized`, 16 at a time on keep-alive connections) and left idle; then
//! one standalone SSE stream (`GET /mcp`) is opened per session, each on its own connection,
//! and held open. RSS (`VmRSS`) is read 500 ms after each step; the growth divided by the
//! count is the memory per session and per stream. Kernel socket buffers are not in RSS.
//! With `--streams-only` no session is opened: the streams are plain `GET /mcp` requests to a
//! server without sessions (the floor), and only the memory per stream is reported.

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, Response, StatusCode};
use serde_json::{Value, json};

use crate::latency::{legacy_session, open};
use crate::server::{SETTLE, Server};
use crate::{Settings, procfs};

/// Concurrent connections that open sessions and streams.
const PARALLEL: usize = 16;

/// Runs the session and stream memory measurement against one server.
pub async fn run(settings: &Settings, count: usize) -> Result<Value, String> {
    let mut server = Server::start(settings, 0).await?;
    let (pid, addr) = (server.pid, server.addr);
    let outcome = async {
        let idle = procfs::memory_kb(pid, "VmRSS")?;
        let sessions = if settings.streams_only {
            vec![String::new(); count]
        } else {
            open_sessions(addr, count).await?
        };
        tokio::time::sleep(SETTLE).await;
        let with_sessions = procfs::memory_kb(pid, "VmRSS")?;
        let streams = open_streams(addr, &sessions).await?;
        tokio::time::sleep(SETTLE).await;
        let with_streams = procfs::memory_kb(pid, "VmRSS")?;
        let n = count.max(1) as f64;
        let report = json!({
            "sessions": count,
            "idle_rss_kb": idle,
            "rss_with_sessions_kb": with_sessions,
            "rss_with_streams_kb": with_streams,
            "kb_per_session": (!settings.streams_only)
                .then(|| with_sessions.saturating_sub(idle) as f64 / n),
            "kb_per_stream": with_streams.saturating_sub(with_sessions) as f64 / n,
        });
        drop(streams);
        Ok::<_, String>(report)
    }
    .await;
    server.stop().await;
    outcome
}

pub(crate) async fn open_sessions(addr: SocketAddr, count: usize) -> Result<Vec<String>, String> {
    let mut tasks = Vec::new();
    for worker in 0..PARALLEL {
        let share = count / PARALLEL + usize::from(worker < count % PARALLEL);
        tasks.push(tokio::spawn(async move {
            let mut sender = open(addr).await?;
            let mut ids = Vec::with_capacity(share);
            for _ in 0..share {
                ids.push(legacy_session(&mut sender, addr).await?);
            }
            Ok::<_, String>(ids)
        }));
    }
    let mut sessions = Vec::with_capacity(count);
    for task in tasks {
        sessions.extend(task.await.map_err(|e| e.to_string())??);
    }
    Ok(sessions)
}

/// An open stream: its response (body unread) and its connection's sender.
pub(crate) type Held = (Response<Incoming>, SendRequest<Full<Bytes>>);

/// One open `GET /mcp` stream per session; the responses are held (unread) until dropped.
pub(crate) async fn open_streams(
    addr: SocketAddr,
    sessions: &[String],
) -> Result<Vec<Held>, String> {
    let mut held = Vec::with_capacity(sessions.len());
    for chunk in sessions.chunks(PARALLEL) {
        let mut tasks = Vec::new();
        for session in chunk {
            let session = session.clone();
            tasks.push(tokio::spawn(async move {
                let mut sender = open(addr).await?;
                let mut request = Request::get("/mcp")
                    .header("host", addr.to_string())
                    .header("accept", "text/event-stream")
                    .header("mcp-protocol-version", "2025-11-25");
                if !session.is_empty() {
                    request = request.header("mcp-session-id", &session);
                }
                let request = request
                    .body(Full::new(Bytes::new()))
                    .map_err(|e| e.to_string())?;
                sender
                    .ready()
                    .await
                    .map_err(|e| format!("stream connection: {e}"))?;
                let response = sender
                    .send_request(request)
                    .await
                    .map_err(|e| format!("GET stream: {e}"))?;
                if response.status() != StatusCode::OK {
                    return Err(format!("GET stream: HTTP {}", response.status()));
                }
                Ok::<_, String>((response, sender))
            }));
        }
        for task in tasks {
            held.push(task.await.map_err(|e| e.to_string())??);
        }
    }
    Ok(held)
}
