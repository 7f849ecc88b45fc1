//! The loopback proxy: every request is read whole, logged, matched against the rules, then
//! refused, cut or forwarded to the server on a connection of its own, and its answer relayed
//! (or cut, stalled, truncated) as the matching [`Fault`] says.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::body::{ChannelBody, Cut};
use crate::fault::{Fault, Rule, Seen};

/// The longest any one step of the proxy (reading a request, reaching the server, reading
/// an answer it holds back) may take: the proxy itself never hangs a test.
const STEP_LIMIT: Duration = Duration::from_secs(10);
/// How long a cut waits for what was passed on before it to be written out.
const FLUSH_PAUSE: Duration = Duration::from_millis(30);

/// A loopback HTTP proxy in front of one server; stops when dropped (stalled streams close).
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: tokio::task::AbortHandle,
}

struct Shared {
    upstream: Arc<Mutex<SocketAddr>>,
    rules: Mutex<Vec<Rule>>,
    seen: Mutex<Vec<Seen>>,
    /// The senders of stalled bodies, kept alive (and so the streams open) until the end.
    stalled: Mutex<Vec<mpsc::Sender<Result<Bytes, Cut>>>>,
    /// Bumped to cut every answer being relayed (the server went away under them).
    cut: tokio::sync::watch::Sender<u64>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to the address in `upstream` (read for
    /// each request, so a restarted server is found at its new address).
    pub async fn start(upstream: Arc<Mutex<SocketAddr>>) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("the proxy binds a loopback port");
        let addr = listener
            .local_addr()
            .expect("a bound listener has an address");
        let shared = Arc::new(Shared {
            upstream,
            rules: Mutex::new(Vec::new()),
            seen: Mutex::new(Vec::new()),
            stalled: Mutex::new(Vec::new()),
            cut: tokio::sync::watch::Sender::new(0),
        });
        let accept = tokio::spawn(accept_loop(listener, shared.clone())).abort_handle();
        Proxy {
            addr,
            shared,
            accept,
        }
    }

    /// `http://127.0.0.1:{port}/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Adds a rule; the first rule that matches a request (and has uses left) applies.
    pub fn fault(&self, rule: Rule) {
        lock(&self.shared.rules).push(rule);
    }

    /// Drops every rule not used up yet.
    pub fn clear_faults(&self) {
        lock(&self.shared.rules).clear();
    }

    /// Every request seen so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.shared.seen).clone()
    }

    /// How many POSTs carried JSON-RPC `method`.
    pub fn count(&self, method: &str) -> usize {
        lock(&self.shared.seen)
            .iter()
            .filter(|s| s.rpc_method.as_deref() == Some(method))
            .count()
    }

    /// How many `tools/call` POSTs named `tool`.
    pub fn count_tool(&self, tool: &str) -> usize {
        lock(&self.shared.seen)
            .iter()
            .filter(|s| s.tool.as_deref() == Some(tool))
            .count()
    }

    /// How many answers are being relayed now (their heads have come back through the proxy
    /// and their bodies are still on their way): open SSE streams, mostly.
    pub fn relaying(&self) -> usize {
        // Each relay holds one receiver of `cut` while it runs.
        self.shared.cut.receiver_count()
    }

    /// Waits until at least `count` answers are being relayed at once (their heads have come
    /// back through the proxy and their bodies are still on their way), or `within` passed;
    /// whether they were. What a test waits for before it cuts a stream, rather than a guess.
    pub async fn wait_relaying(&self, count: usize, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        while self.relaying() < count {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }

    /// Ends the stalled streams (their connections close).
    pub fn release_stalls(&self) {
        lock(&self.shared.stalled).clear();
    }

    /// Cuts every answer being relayed now, as a server that crashed would: the clients'
    /// connections close mid-answer.
    pub fn cut_open_streams(&self) {
        self.shared.cut.send_modify(|generation| *generation += 1);
        self.release_stalls();
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        lock(&self.shared.stalled).clear();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Accepts connections and serves each; the connections end with this task.
async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let shared = shared.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let shared = shared.clone();
                async move { handle(&shared, request).await }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), service)
                .await;
        });
        while connections.try_join_next().is_some() {}
    }
}

/// One request: logged, matched, then refused, cut or forwarded.
async fn handle(
    shared: &Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<ChannelBody>, Cut> {
    let (parts, body) = request.into_parts();
    let bytes = match tokio::time::timeout(STEP_LIMIT, body.collect()).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        _ => return Err(Cut("the request body did not arrive")),
    };
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (rpc_method, tool) = peek(&bytes);
    let mut seen = Seen {
        http_method: parts.method.to_string(),
        rpc_method,
        tool,
        session: header("mcp-session-id"),
        last_event_id: header("last-event-id"),
        fault: None,
    };
    let fault = {
        let mut rules = lock(&shared.rules);
        rules.iter_mut().find(|r| r.matches(&seen)).map(|rule| {
            rule.times -= 1;
            rule.fault.clone()
        })
    };
    seen.fault = fault.clone();
    lock(&shared.seen).push(seen);
    match &fault {
        Some(Fault::ResetBeforeForward) => return Err(Cut("reset before forwarding")),
        Some(Fault::SessionNotFound) => {
            return Ok(plain(StatusCode::NOT_FOUND, None, "Session not found"));
        }
        Some(Fault::Status { code, retry_after }) => {
            let status = StatusCode::from_u16(*code).unwrap_or(StatusCode::BAD_GATEWAY);
            return Ok(plain(status, *retry_after, "the proxy refused"));
        }
        Some(Fault::Delay(delay)) => tokio::time::sleep(*delay).await,
        _ => {}
    }
    let upstream = *lock(&shared.upstream);
    let response = match forward(upstream, Request::from_parts(parts, Full::new(bytes))).await {
        Ok(response) => response,
        Err(why) => return Ok(plain(StatusCode::BAD_GATEWAY, None, &why)),
    };
    let (head, body) = response.into_parts();
    match fault {
        Some(Fault::ResetAfterForward) => {
            // The server finishes its work and answers; the client hears none of it.
            let _ = tokio::time::timeout(STEP_LIMIT, body.collect()).await;
            Err(Cut("reset after forwarding"))
        }
        Some(Fault::TruncateBody { bytes }) => {
            let whole = match tokio::time::timeout(STEP_LIMIT, body.collect()).await {
                Ok(Ok(collected)) => collected.to_bytes(),
                _ => return Err(Cut("the server's answer did not arrive")),
            };
            let cut = whole.slice(..bytes.min(whole.len()));
            let mut response = Response::from_parts(head, ChannelBody::full(cut.clone()));
            response
                .headers_mut()
                .insert(header::CONTENT_LENGTH, HeaderValue::from(cut.len()));
            Ok(response)
        }
        other => Ok(relay(shared, head, body, other)),
    }
}

/// The JSON-RPC method of a POSTed message, and the tool of a `tools/call`.
fn peek(body: &[u8]) -> (Option<String>, Option<String>) {
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        return (None, None);
    };
    let method = message["method"].as_str().map(str::to_owned);
    let tool = (method.as_deref() == Some("tools/call"))
        .then(|| message["params"]["name"].as_str().map(str::to_owned))
        .flatten();
    (method, tool)
}

/// A plain-text answer made up by the proxy.
fn plain(status: StatusCode, retry_after: Option<u64>, text: &str) -> Response<ChannelBody> {
    let mut response = Response::new(ChannelBody::full(Bytes::from(text.to_owned())));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(text.len()));
    if let Some(seconds) = retry_after {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// Sends `request` to the server on a connection of its own.
async fn forward(
    upstream: SocketAddr,
    request: Request<Full<Bytes>>,
) -> Result<Response<Incoming>, String> {
    let exchange = async {
        let tcp = TcpStream::connect(upstream)
            .await
            .map_err(|e| format!("the server is unreachable: {e}"))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| format!("the handshake with the server failed: {e}"))?;
        tokio::spawn(connection);
        sender
            .send_request(request)
            .await
            .map_err(|e| format!("the server did not answer: {e}"))
    };
    tokio::time::timeout(STEP_LIMIT, exchange)
        .await
        .unwrap_or_else(|_| Err("the server did not answer in time".into()))
}

/// Relays the server's answer to the client, chunk by chunk; under `DropMidStream` or
/// `Stall`, event by event until the count, then cut or stalled.
fn relay(
    shared: &Arc<Shared>,
    head: hyper::http::response::Parts,
    mut body: Incoming,
    fault: Option<Fault>,
) -> Response<ChannelBody> {
    let sse = head
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let limit = match fault {
        Some(Fault::DropMidStream { events }) => Some((events, false)),
        Some(Fault::Stall { events }) => Some((events, true)),
        _ => None,
    };
    let (tx, client_body) = ChannelBody::new();
    let shared = shared.clone();
    let mut cut = shared.cut.subscribe();
    tokio::spawn(async move {
        let end = |tx: mpsc::Sender<Result<Bytes, Cut>>, stall: bool| async move {
            if stall {
                lock(&shared.stalled).push(tx);
            } else {
                // The events passed on reach the client before the cut: hyper drops what it
                // has not written yet when a body fails.
                while tx.capacity() < tx.max_capacity() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                tokio::time::sleep(FLUSH_PAUSE).await;
                let _ = tx.send(Err(Cut("dropped mid-stream"))).await;
            }
        };
        let mut passed = 0;
        let mut pending: Vec<u8> = Vec::new();
        if let Some((events, stall)) = limit
            && (events == 0 || !sse)
        {
            return end(tx, stall).await;
        }
        loop {
            let frame = tokio::select! {
                frame = body.frame() => frame,
                _ = cut.changed() => {
                    let _ = tx.send(Err(Cut("the server went away"))).await;
                    return;
                }
            };
            let Some(frame) = frame else { break };
            let Ok(frame) = frame else {
                let _ = tx.send(Err(Cut("the server's stream broke"))).await;
                return;
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let Some((events, stall)) = limit else {
                if tx.send(Ok(data)).await.is_err() {
                    return;
                }
                continue;
            };
            pending.extend_from_slice(&data);
            while let Some(at) = pending.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = pending.drain(..at + 2).collect();
                if tx.send(Ok(Bytes::from(event))).await.is_err() {
                    return;
                }
                passed += 1;
                if passed == events {
                    return end(tx, stall).await;
                }
            }
        }
        if !pending.is_empty() {
            let _ = tx.send(Ok(Bytes::from(pending))).await;
        }
    });
    Response::from_parts(head, client_body)
}
