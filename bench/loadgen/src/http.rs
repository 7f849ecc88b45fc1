//! Streamable HTTP: cold start, idle memory, closed-loop load at several connection counts,
//! the multi-round flow, peak memory.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{self, HeaderValue};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::process::Child;

use crate::server::Server;
use crate::wire::{self, Answer};
use crate::{Settings, percentile, procfs, text_for};

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// One client connection.
pub(crate) struct Connection {
    sender: SendRequest<Full<Bytes>>,
    host: HeaderValue,
}

impl Connection {
    pub(crate) async fn open(addr: SocketAddr) -> Result<Self, String> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tokio::spawn(connection);
        Ok(Self {
            sender,
            host: HeaderValue::from_str(&addr.to_string()).map_err(|e| e.to_string())?,
        })
    }

    /// One POST to `/mcp` with the 2026-07-28 headers: the status, content type and body.
    async fn post(
        &mut self,
        method: &str,
        name: &str,
        body: Vec<u8>,
    ) -> Result<(StatusCode, String, Bytes), String> {
        // The constant headers are built once (`from_static`), not parsed per request: the
        // load generator's CPU is taken from the server it measures.
        let request = Request::post("/mcp")
            .header(header::HOST, self.host.clone())
            .header(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )
            .header(
                header::ACCEPT,
                HeaderValue::from_static("application/json, text/event-stream"),
            )
            .header(
                "mcp-protocol-version",
                HeaderValue::from_static(wire::VERSION),
            )
            .header("mcp-method", method);
        // Methods that name nothing (`tools/list`) send no `Mcp-Name`.
        let request = if name.is_empty() {
            request
        } else {
            request.header("mcp-name", name)
        };
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        self.sender
            .ready()
            .await
            .map_err(|e| format!("connection: {e}"))?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|e| format!("request: {e}"))?;
        read_response(response).await
    }

    /// One POST of one `tools/call`, checked.
    async fn leg(
        &mut self,
        id: u64,
        tool: &str,
        text: &str,
        retry: Option<&wire::Retry>,
    ) -> Result<Answer, String> {
        let body = wire::call_body(id, tool, text, retry);
        let (status, content_type, body) = self.post("tools/call", tool, body).await?;
        if status != StatusCode::OK {
            return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body)));
        }
        wire::check(
            &content_type,
            &body,
            id,
            text,
            retry.is_none() && tool != "echo",
        )
    }

    /// One 2026-07-28 request declaring the Tasks extension, answered as JSON: its result.
    pub(crate) async fn rpc(
        &mut self,
        id: u64,
        method: &str,
        name: &str,
        mut params: Value,
    ) -> Result<Value, String> {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": wire::VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "loadgen", "version": "0.0.0"},
            "io.modelcontextprotocol/clientCapabilities": {
                "elicitation": {"form": {}},
                "extensions": {"io.modelcontextprotocol/tasks": {}}
            }
        });
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (status, _, body) = self
            .post(method, name, body.to_string().into_bytes())
            .await?;
        let message: Value = serde_json::from_slice(&body)
            .map_err(|e| format!("{method}: HTTP {status}, not JSON: {e}"))?;
        if message["id"].as_u64() != Some(id) {
            return Err(format!(
                "{method}: response id {} is not {id}",
                message["id"]
            ));
        }
        match message.get("result") {
            Some(result) if status == StatusCode::OK => Ok(result.clone()),
            _ => Err(format!("{method}: HTTP {status}: {message}")),
        }
    }

    /// One task flow (`task_echo`): create, poll until it asks, answer with `tasks/update`,
    /// poll until it completes, check the echo. Returns the number of `tasks/get` polls.
    async fn task_flow(&mut self, ids: &AtomicU64) -> Result<u64, String> {
        let next = || ids.fetch_add(1, Ordering::Relaxed);
        let id = next();
        let text = text_for(id);
        let created = self
            .rpc(
                id,
                "tools/call",
                "task_echo",
                json!({"name": "task_echo", "arguments": {"text": text}}),
            )
            .await?;
        if created["resultType"] != "task" {
            return Err(format!("task_echo did not create a task: {created}"));
        }
        let task = created["taskId"].as_str().ok_or("no taskId")?.to_owned();
        let mut polls = 0;
        let mut answered = false;
        loop {
            polls += 1;
            let got = self
                .rpc(next(), "tasks/get", &task, json!({"taskId": task}))
                .await?;
            match got["status"].as_str() {
                Some("working") => {}
                Some("input_required") if !answered => {
                    let requests = got["inputRequests"]
                        .as_object()
                        .ok_or("input_required without inputRequests")?;
                    let responses: serde_json::Map<String, Value> = requests
                        .keys()
                        .map(|k| {
                            (
                                k.clone(),
                                json!({"action": "accept", "content": {"ok": true}}),
                            )
                        })
                        .collect();
                    self.rpc(
                        next(),
                        "tasks/update",
                        &task,
                        json!({"taskId": task, "inputResponses": responses}),
                    )
                    .await?;
                    answered = true;
                }
                Some("input_required") => {}
                Some("completed") => {
                    let echoed = got["result"]["content"][0]["text"].as_str();
                    if echoed != Some(text.as_str()) {
                        return Err(format!("task echoed {echoed:?}, sent {text:?}"));
                    }
                    return Ok(polls);
                }
                other => return Err(format!("task ended {other:?}: {got}")),
            }
            if polls > 10_000 {
                return Err("a task did not complete after 10,000 polls".into());
            }
        }
    }

    /// Creates a `task_wait` task (it stays `working` until cancelled): its id.
    async fn create_waiting_task(&mut self, ids: &AtomicU64) -> Result<String, String> {
        let id = ids.fetch_add(1, Ordering::Relaxed);
        let created = self
            .rpc(
                id,
                "tools/call",
                "task_wait",
                json!({"name": "task_wait", "arguments": {}}),
            )
            .await?;
        if created["resultType"] != "task" || created["status"] != "working" {
            return Err(format!(
                "task_wait did not create a working task: {created}"
            ));
        }
        Ok(created["taskId"]
            .as_str()
            .ok_or("task_wait: no taskId")?
            .to_owned())
    }

    /// One `tasks/get` of a task that must still be `working`, checked: the id (in `rpc`), the
    /// task id and the status.
    async fn poll_working(&mut self, ids: &AtomicU64, task: &str) -> Result<(), String> {
        let id = ids.fetch_add(1, Ordering::Relaxed);
        let got = self
            .rpc(id, "tasks/get", task, json!({"taskId": task}))
            .await?;
        check_working(&got, task)
    }

    /// `tasks/cancel` of a task, checked: the task must then end (`cancelled`, or `completed`
    /// if its body had returned), within 5 s of polling (cancellation reaches the body through
    /// the task's change feed, so the first poll may still say `working`).
    async fn cancel_task(&mut self, ids: &AtomicU64, task: &str) -> Result<(), String> {
        let id = ids.fetch_add(1, Ordering::Relaxed);
        self.rpc(id, "tasks/cancel", task, json!({"taskId": task}))
            .await?;
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let id = ids.fetch_add(1, Ordering::Relaxed);
            let got = self
                .rpc(id, "tasks/get", task, json!({"taskId": task}))
                .await?;
            match got["status"].as_str() {
                Some("cancelled") | Some("completed") => return Ok(()),
                Some("working") if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                other => return Err(format!("task {task} is {other:?} after tasks/cancel")),
            }
        }
    }

    /// A plain call (`echo`), or a full flow (`confirm_echo`: call, input_required, retry,
    /// result).
    pub(crate) async fn call(&mut self, ids: &AtomicU64, tool: &str) -> Result<(), String> {
        let id = ids.fetch_add(1, Ordering::Relaxed);
        let text = text_for(id);
        match self.leg(id, tool, &text, None).await? {
            Answer::Complete if tool == "echo" => Ok(()),
            Answer::Complete => Err(format!("{tool} completed without asking")),
            Answer::InputRequired(retry) => {
                let id = ids.fetch_add(1, Ordering::Relaxed);
                match self.leg(id, tool, &text, Some(&retry)).await? {
                    Answer::Complete => Ok(()),
                    Answer::InputRequired(_) => Err("asked again after the answer".into()),
                }
            }
        }
    }
}

/// Checks a `tasks/get` result: the task asked for, still `working`.
fn check_working(got: &Value, task: &str) -> Result<(), String> {
    if got["taskId"].as_str() != Some(task) {
        return Err(format!("tasks/get for {task} answered {}", got["taskId"]));
    }
    if got["status"] != "working" {
        return Err(format!("task {task} is not working: {got}"));
    }
    Ok(())
}

/// The pseudo-tool of a level that polls `tasks/get` on a `task_wait` task per connection.
const TASKS_GET: &str = "tasks/get";

/// The figures of one measured window.
struct Level {
    requests: usize,
    secs: f64,
    latencies: Vec<u32>,
    cpu_us: u64,
    /// `tasks/get` polls made in the measured flows (task flows only).
    polls: u64,
}

impl Level {
    fn json(&self, conns: usize) -> Value {
        let n = self.requests.max(1) as f64;
        json!({
            "conns": conns,
            "requests": self.requests,
            "secs": self.secs,
            "rps": self.requests as f64 / self.secs,
            "p50_us": percentile(&self.latencies, 50.0),
            "p90_us": percentile(&self.latencies, 90.0),
            "p99_us": percentile(&self.latencies, 99.0),
            "cpu_us_per_req": self.cpu_us as f64 / n,
        })
    }
}

async fn level(
    addr: SocketAddr,
    pid: u32,
    conns: usize,
    tool: &'static str,
    settings: &Settings,
) -> Result<Level, String> {
    let phase = Arc::new(AtomicU8::new(WARMUP));
    let ids = Arc::new(AtomicU64::new(1_000));
    let polls = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::with_capacity(conns);
    for _ in 0..conns {
        let phase = phase.clone();
        let ids = ids.clone();
        let polls = polls.clone();
        tasks.push(tokio::spawn(async move {
            let mut connection = Connection::open(addr).await?;
            let mut latencies = Vec::with_capacity(4096);
            // tasks/get: one task per connection, created before the measured window.
            let waiting = if tool == TASKS_GET {
                Some(connection.create_waiting_task(&ids).await?)
            } else {
                None
            };
            loop {
                if phase.load(Ordering::Relaxed) == STOP {
                    if let Some(task) = &waiting {
                        connection.cancel_task(&ids, task).await?;
                    }
                    return Ok::<_, String>(latencies);
                }
                let start = Instant::now();
                let made = if let Some(task) = &waiting {
                    connection.poll_working(&ids, task).await?;
                    0
                } else if tool == "task_echo" {
                    connection.task_flow(&ids).await?
                } else {
                    connection.call(&ids, tool).await?;
                    0
                };
                if phase.load(Ordering::Relaxed) == MEASURE {
                    polls.fetch_add(made, Ordering::Relaxed);
                    latencies.push(start.elapsed().as_micros().min(u32::MAX as u128) as u32);
                }
            }
        }));
    }
    tokio::time::sleep(settings.warmup).await;
    phase.store(MEASURE, Ordering::Relaxed);
    let cpu_start = procfs::cpu_us(pid)?;
    let start = Instant::now();
    tokio::time::sleep(settings.secs).await;
    phase.store(STOP, Ordering::Relaxed);
    let secs = start.elapsed().as_secs_f64();
    let cpu_end = procfs::cpu_us(pid)?;
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.map_err(|e| e.to_string())??);
    }
    latencies.sort_unstable();
    Ok(Level {
        requests: latencies.len(),
        secs,
        latencies,
        cpu_us: cpu_end.saturating_sub(cpu_start),
        polls: polls.load(Ordering::Relaxed),
    })
}

/// A response's status, content type and whole body.
pub(crate) async fn read_response(
    response: hyper::Response<hyper::body::Incoming>,
) -> Result<(StatusCode, String, Bytes), String> {
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("body: {e}"))?
        .to_bytes();
    Ok((status, content_type, body))
}

pub(crate) fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

/// Polls until the server answers a correct echo; returns the time since `spawned`.
pub(crate) async fn first_answer(
    addr: SocketAddr,
    spawned: Instant,
    child: &mut Child,
) -> Result<Duration, String> {
    let ids = AtomicU64::new(1);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("server exited early with {status}"));
        }
        if spawned.elapsed() > Duration::from_secs(60) {
            return Err("server did not answer within 60 s".into());
        }
        if let Ok(mut connection) = Connection::open(addr).await
            && connection.call(&ids, "echo").await.is_ok()
        {
            return Ok(spawned.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Runs the whole HTTP suite against one server.
pub async fn run(settings: &Settings) -> Result<Value, String> {
    let mut server = Server::spawn(settings, 0)?;
    let outcome = suite(&mut server, settings).await;
    // Our own child, by its PID (kill_on_drop covers the error paths too).
    server.stop().await;
    outcome
}

async fn suite(server: &mut Server, settings: &Settings) -> Result<Value, String> {
    let cold = server.first_answer().await?;
    let (addr, pid) = (server.addr, server.pid);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle_rss = procfs::memory_kb(pid, "VmRSS")?;
    let mut levels = Vec::new();
    let mut plain_cpu = std::collections::HashMap::new();
    for &conns in &settings.conns {
        let measured = level(addr, pid, conns, "echo", settings).await?;
        plain_cpu.insert(
            conns,
            measured.cpu_us as f64 / measured.requests.max(1) as f64,
        );
        levels.push(measured.json(conns));
    }
    let peak_rss = procfs::memory_kb(pid, "VmHWM")?;
    let flow = match settings.flow {
        Some(conns) => {
            let measured = level(addr, pid, conns, "confirm_echo", settings).await?;
            let mut flow = measured.json(conns);
            let per_flow = measured.cpu_us as f64 / measured.requests.max(1) as f64;
            if let Some(plain) = plain_cpu.get(&conns) {
                flow["cpu_vs_plain"] = json!(per_flow / plain);
            }
            flow
        }
        None => Value::Null,
    };
    let task = match settings.task {
        Some(conns) => {
            let measured = level(addr, pid, conns, "task_echo", settings).await?;
            let mut task = measured.json(conns);
            let per_flow = measured.cpu_us as f64 / measured.requests.max(1) as f64;
            if let Some(plain) = plain_cpu.get(&conns) {
                task["cpu_vs_plain"] = json!(per_flow / plain);
            }
            task["polls"] = json!(measured.polls);
            task
        }
        None => Value::Null,
    };
    let task_get = match settings.task_get {
        Some(conns) => {
            let measured = level(addr, pid, conns, TASKS_GET, settings).await?;
            let mut polls = measured.json(conns);
            let per_get = measured.cpu_us as f64 / measured.requests.max(1) as f64;
            if let Some(plain) = plain_cpu.get(&conns) {
                polls["cpu_vs_plain"] = json!(per_get / plain);
            }
            polls
        }
        None => Value::Null,
    };
    let latency = if settings.latency {
        crate::latency::suite(addr, settings).await?
    } else {
        Value::Null
    };
    Ok(json!({
        "latency": latency,
        "task": task,
        "task_get": task_get,
        "cold_start_ms": cold.as_secs_f64() * 1e3,
        "idle_rss_kb": idle_rss,
        "peak_rss_kb": peak_rss,
        "levels": levels,
        "flow": flow,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poll_must_name_the_task_and_say_working() {
        let ok = json!({"taskId": "t1", "status": "working", "pollIntervalMs": 1});
        assert!(check_working(&ok, "t1").is_ok());
        assert!(check_working(&ok, "t2").is_err());
        let done = json!({"taskId": "t1", "status": "completed"});
        assert!(check_working(&done, "t1").is_err());
    }
}
