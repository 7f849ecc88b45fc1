//! How the cost grows with the work (`loadgen scale`): one kind of unit at a time, held open
//! or kept by the server, grown step by step; at each step the server's RSS and the latency of
//! plain calls made alongside, one at a time on a connection of their own.
//!
//! | kind | a unit | the plain call |
//! | --- | --- | --- |
//! | `sessions` | an idle 2025-11-25 session (`initialize`, `notifications/initialized`) | a 2025-11-25 `tools/call` of `echo` in a session of its own |
//! | `streams` | a 2025-11-25 session holding its standalone SSE stream (`GET /mcp`), each on its own connection | the same |
//! | `listen` | an open 2026-07-28 `subscriptions/listen` stream, each on its own connection | a 2026-07-28 `tools/call` of `echo` |
//! | `tasks` | a task kept by the server (`task_done`, completed at once, kept until its TTL; with `--watch PID`, the RSS of the Redis that keeps them too) | the same |
//! | `tools` | a tool in the registry (`echo_0`, …): a new server per step, started with that many | the same, and every page of `tools/list` |
//!
//! Units are opened 16 at a time on keep-alive connections (streams: each on its own), and
//! kept: step two adds to step one. RSS (`VmRSS`) is read 500 ms after a step is filled.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

use crate::http::{Connection, read_response};
use crate::latency::{LEGACY, legacy_session, open, post};
use crate::server::{SETTLE, Server};
use crate::sessions::{open_sessions, open_streams};
use crate::{Settings, percentile, text_for, wire};

/// Connections that create units in parallel.
const PARALLEL: usize = 16;

/// What one step holds open until the run ends (never read: dropping it closes it).
#[allow(dead_code)]
enum Held {
    Sessions(Vec<String>),
    Streams(Vec<crate::sessions::Held>),
    Listen(Vec<(Response<Incoming>, SendRequest<Full<Bytes>>)>),
    Nothing,
}

/// Runs the scaling steps of `settings.kind` against one server (`tools`: one per step).
pub async fn run(settings: &Settings) -> Result<Value, String> {
    let kind = settings.kind.as_str();
    if !["sessions", "streams", "listen", "tasks", "tools"].contains(&kind) {
        return Err(format!(
            "unknown kind {kind:?} (sessions, streams, listen, tasks, tools)"
        ));
    }
    let mut steps = Vec::new();
    if kind == "tools" {
        // A server per step, and one with none of the extra tools first (the baseline).
        let mut base = None;
        for &count in std::iter::once(&0).chain(&settings.steps) {
            let mut server = Server::start(settings, count).await?;
            let outcome = async {
                let rss = server.rss()?;
                let probe = probe(server.addr, Era::Modern, settings.probe).await?;
                let listing =
                    list_tools(server.addr, count + BUILT_IN_TOOLS, settings.probe).await?;
                Ok::<_, String>((rss, probe, listing))
            }
            .await;
            server.stop().await;
            let (rss, probe, listing) = outcome?;
            let idle = *base.get_or_insert(rss);
            if count > 0 {
                let mut step = step_report(count, rss, idle, &steps, probe);
                step["tools_list"] = listing;
                steps.push(step);
            }
        }
        return Ok(json!({"kind": kind, "steps": steps}));
    }
    let mut server = Server::start(settings, 0).await?;
    let watched = |pid: u32| crate::procfs::memory_kb(pid, "VmRSS");
    let outcome = async {
        let idle = server.rss()?;
        let watched_idle = settings.watch.map(watched).transpose()?;
        let mut held = Vec::new();
        let mut have = 0;
        let ids = Arc::new(AtomicU64::new(1));
        for &count in &settings.steps {
            let filling = Instant::now();
            held.push(fill(kind, server.addr, count.saturating_sub(have), &ids).await?);
            let fill_secs = filling.elapsed().as_secs_f64();
            have = count.max(have);
            tokio::time::sleep(SETTLE).await;
            let rss = server.rss()?;
            let era = if matches!(kind, "sessions" | "streams") {
                Era::Legacy
            } else {
                Era::Modern
            };
            let probe = probe(server.addr, era, settings.probe).await?;
            let mut step = step_report(count, rss, idle, &steps, probe);
            step["fill_secs"] = json!(fill_secs);
            if let (Some(pid), Some(before)) = (settings.watch, watched_idle) {
                let rss = watched(pid)?;
                step["watched_rss_kb"] = json!(rss);
                step["watched_kb_per_unit"] =
                    json!(rss.saturating_sub(before) as f64 / count.max(1) as f64);
            }
            eprintln!("loadgen: {kind} {count}: {step}");
            steps.push(step);
        }
        drop(held);
        Ok::<_, String>(json!({"kind": kind, "idle_rss_kb": idle, "steps": steps}))
    }
    .await;
    server.stop().await;
    outcome
}

/// The tools `our-echo` always has (`echo`, `confirm_echo`, `progress_echo`, `task_echo`,
/// `task_wait`, `task_done`).
const BUILT_IN_TOOLS: usize = 6;

/// One step's figures: RSS per unit over the whole run and since the previous step.
fn step_report(count: usize, rss: u64, idle: u64, before: &[Value], probe: Probe) -> Value {
    let (last_count, last_rss) = before
        .last()
        .map(|s| {
            (
                s["units"].as_u64().unwrap_or(0),
                s["rss_kb"].as_u64().unwrap_or(idle),
            )
        })
        .unwrap_or((0, idle));
    let added = (count as u64).saturating_sub(last_count).max(1) as f64;
    json!({
        "units": count,
        "rss_kb": rss,
        "kb_per_unit": rss.saturating_sub(idle) as f64 / count.max(1) as f64,
        "kb_per_unit_since_last": rss.saturating_sub(last_rss) as f64 / added,
        "call_p50_us": probe.p50,
        "call_p99_us": probe.p99,
        "calls": probe.calls,
    })
}

/// Opens (or creates) `count` more units of `kind`.
async fn fill(
    kind: &str,
    addr: SocketAddr,
    count: usize,
    ids: &Arc<AtomicU64>,
) -> Result<Held, String> {
    match kind {
        "sessions" => Ok(Held::Sessions(open_sessions(addr, count).await?)),
        "streams" => {
            let sessions = open_sessions(addr, count).await?;
            Ok(Held::Streams(open_streams(addr, &sessions).await?))
        }
        "listen" => Ok(Held::Listen(open_listen(addr, count).await?)),
        "tasks" => {
            create_tasks(addr, count, ids).await?;
            Ok(Held::Nothing)
        }
        other => Err(format!("nothing to fill for {other:?}")),
    }
}

/// `count` open `subscriptions/listen` streams, each on its own connection, 16 opening at a
/// time; each must answer 200 with an SSE stream.
async fn open_listen(
    addr: SocketAddr,
    count: usize,
) -> Result<Vec<(Response<Incoming>, SendRequest<Full<Bytes>>)>, String> {
    let mut held = Vec::with_capacity(count);
    let mut next = 0;
    while next < count {
        let batch = PARALLEL.min(count - next);
        let mut tasks = Vec::with_capacity(batch);
        for n in next..next + batch {
            tasks.push(tokio::spawn(async move {
                let mut sender = open(addr).await?;
                let request = json!({"jsonrpc": "2.0", "id": n, "method": "subscriptions/listen",
                    "params": {"notifications": {"toolsListChanged": true}, "_meta": wire::meta()}});
                let headers = [
                    ("mcp-protocol-version", wire::VERSION),
                    ("mcp-method", "subscriptions/listen"),
                ];
                let response = post(&mut sender, addr, &headers, &request).await?;
                let sse = response
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|t| t.starts_with("text/event-stream"));
                if response.status() != StatusCode::OK || !sse {
                    let status = response.status();
                    let body = response.into_body().collect().await.map(|b| b.to_bytes());
                    let body = body.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
                    return Err(format!("subscriptions/listen {n}: HTTP {status}: {body}"));
                }
                Ok::<_, String>((response, sender))
            }));
        }
        for task in tasks {
            held.push(task.await.map_err(|e| e.to_string())??);
        }
        next += batch;
    }
    Ok(held)
}

/// Creates `count` `task_done` tasks over 16 connections; each answer must be a task.
async fn create_tasks(addr: SocketAddr, count: usize, ids: &Arc<AtomicU64>) -> Result<(), String> {
    let mut workers = Vec::new();
    for worker in 0..PARALLEL {
        let share = count / PARALLEL + usize::from(worker < count % PARALLEL);
        let ids = ids.clone();
        workers.push(tokio::spawn(async move {
            let mut connection = Connection::open(addr).await?;
            for _ in 0..share {
                let id = ids.fetch_add(1, Ordering::Relaxed);
                let args = json!({"name": "task_done", "arguments": {"text": text_for(id)}});
                let created = connection.rpc(id, "tools/call", "task_done", args).await?;
                if created["resultType"] != "task" {
                    return Err(format!("task_done did not create a task: {created}"));
                }
            }
            Ok::<_, String>(())
        }));
    }
    for worker in workers {
        worker.await.map_err(|e| e.to_string())??;
    }
    Ok(())
}

/// Which wire the plain calls use.
#[derive(Clone, Copy)]
enum Era {
    /// 2025-11-25, in a session opened for the probe.
    Legacy,
    /// 2026-07-28, stateless.
    Modern,
}

/// Latencies of the plain calls made at one step.
struct Probe {
    p50: u32,
    p99: u32,
    calls: usize,
}

/// Plain `echo` calls one at a time for `secs` (after 200 ms not counted), each checked.
async fn probe(addr: SocketAddr, era: Era, secs: Duration) -> Result<Probe, String> {
    let warmup = Duration::from_millis(200);
    let mut latencies = Vec::new();
    let started = Instant::now();
    let ids = AtomicU64::new(1);
    match era {
        Era::Modern => {
            let mut connection = Connection::open(addr).await?;
            while started.elapsed() < warmup + secs {
                let at = Instant::now();
                connection.call(&ids, "echo").await?;
                if started.elapsed() > warmup {
                    latencies.push(at.elapsed().as_micros() as u32);
                }
            }
        }
        Era::Legacy => {
            let mut sender = open(addr).await?;
            let session = legacy_session(&mut sender, addr).await?;
            while started.elapsed() < warmup + secs {
                let id = ids.fetch_add(1, Ordering::Relaxed);
                let at = Instant::now();
                legacy_echo(&mut sender, addr, &session, id).await?;
                if started.elapsed() > warmup {
                    latencies.push(at.elapsed().as_micros() as u32);
                }
            }
        }
    }
    latencies.sort_unstable();
    Ok(Probe {
        p50: percentile(&latencies, 50.0),
        p99: percentile(&latencies, 99.0),
        calls: latencies.len(),
    })
}

/// One 2025-11-25 `tools/call` of `echo` in `session`, checked (JSON or SSE answer).
async fn legacy_echo(
    sender: &mut SendRequest<Full<Bytes>>,
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
        "params": {"name": "echo", "arguments": {"text": text}}});
    let (status, content_type, body) =
        read_response(post(sender, addr, &headers, &request).await?).await?;
    if status != StatusCode::OK {
        return Err(format!("legacy echo: HTTP {status}"));
    }
    wire::check(&content_type, &body, id, &text, false).map(|_| ())
}

/// Every page of `tools/list`, walked again and again for `secs`: the pages' latency and that
/// the walk finds `expected` tools.
async fn list_tools(addr: SocketAddr, expected: usize, secs: Duration) -> Result<Value, String> {
    let mut connection = Connection::open(addr).await?;
    let ids = AtomicU64::new(1);
    let mut pages = Vec::new();
    let mut walks = 0;
    let mut per_walk = 0;
    let started = Instant::now();
    while started.elapsed() < secs || walks == 0 {
        let mut cursor: Option<String> = None;
        let mut found = 0;
        per_walk = 0;
        loop {
            let mut params = json!({});
            if let Some(cursor) = &cursor {
                params["cursor"] = json!(cursor);
            }
            let id = ids.fetch_add(1, Ordering::Relaxed);
            let at = Instant::now();
            let page = connection.rpc(id, "tools/list", "", params).await?;
            pages.push(at.elapsed().as_micros() as u32);
            per_walk += 1;
            found += page["tools"].as_array().map_or(0, Vec::len);
            match page["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        if found != expected {
            return Err(format!(
                "tools/list found {found} tools, expected {expected}"
            ));
        }
        walks += 1;
    }
    pages.sort_unstable();
    Ok(json!({
        "pages_per_walk": per_walk,
        "page_p50_us": percentile(&pages, 50.0),
        "page_p99_us": percentile(&pages, 99.0),
        "walks": walks,
    }))
}
