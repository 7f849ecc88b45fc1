//! Security review X10, against a real `redis-server` (Debian package `redis-server`; `.ci/run`
//! installs it): a process that can read and write the fleet's Redis but does not hold the
//! fleet's state keys forges a session record, a bus answer, a task replay and the answer to a
//! task's question. An instance of the fleet believes none of them, and says so in its log at
//! `warn`.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use common::start;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use mcp_server_core::fleet::{Bus, Fleet, SessionStore};
use mcp_server_core::registry::{ElicitationResult, McpServer, ToolDef};
use mcp_server_core::tasks::{TaskConfig, TaskRecord, TaskStore, TaskSupport, Terminal};
use mcp_store_redis::{RedisConfig, RedisStores};
use mcp_transport_http::McpHttpService;
use mcp_types::tools::ToolAnnotations;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const KEY: &str = "0123456789abcdef0123456789abcdef";
const PREFIX: &str = "forge";

#[path = "../../mcp-store-redis/tests/support/redis_server.rs"]
mod redis_server;
use redis_server::RedisServer as Redis;

/// Another connection to the fleet's Redis, under its prefix: everything the fleet keeps
/// there, read and written, and none of its keys.
async fn stores(redis: &Redis) -> RedisStores {
    let url = format!("redis://127.0.0.1:{}/", redis.port);
    let config = RedisConfig::new(url)
        .prefix(PREFIX)
        .task_sweep_interval(Duration::from_millis(200));
    RedisStores::connect(config).await.unwrap()
}

/// What the instances log at `warn` and above, in this test binary.
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

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

#[derive(Clone, Deserialize, JsonSchema)]
struct Consent {
    ok: bool,
}

/// An instance of the fleet: `roots` asks the client for its roots and says how many it got;
/// `reindex` is an idempotent task tool, which a lost worker's successor may run again.
async fn instance(redis: &Redis, name: &str) -> McpHttpService {
    let stores = stores(redis).await;
    let roots = ToolDef::new("roots")
        .arguments::<NoArgs>()
        .handler(|ctx, _: NoArgs| async move {
            let roots = ctx.list_roots().await.map_err(|e| e.to_string())?;
            Ok::<_, String>(format!("{} root(s)", roots.roots.len()))
        });
    let reindex = ToolDef::new("reindex")
        .arguments::<NoArgs>()
        .annotations(ToolAnnotations {
            idempotent_hint: Some(true),
            ..ToolAnnotations::default()
        })
        .task(TaskSupport::Optional)
        .handler(|_ctx, _: NoArgs| async { "reindexed" });
    let confirm = ToolDef::new("confirm")
        .arguments::<NoArgs>()
        .task(TaskSupport::Optional)
        .handler(|ctx, _: NoArgs| async move {
            match ctx.elicit::<Consent>("Proceed?").await {
                Ok(ElicitationResult::Accepted(Consent { ok })) => Ok(format!("proceeded: {ok}")),
                Ok(_) => Ok("declined".to_owned()),
                Err(e) => Err(e.message),
            }
        });
    let fleet = Fleet::shared(
        name,
        Arc::new(stores.session_store()),
        Arc::new(stores.bus()),
    );
    let service = McpServer::new("forge")
        .request_state_security(mcp_state_seal::RequestStateSecurity::keys([KEY]).unwrap())
        .fleet(fleet)
        .tool(roots)
        .tool(reindex)
        .tool(confirm)
        .tasks(
            TaskConfig::new()
                .shared_store(Arc::new(stores.task_store()))
                .sweep_interval(Duration::from_millis(200)),
        )
        .into_service()
        .unwrap();
    McpHttpService::new(service)
}

async fn post(url: &str, session: Option<&str>, body: Value) -> Response<Incoming> {
    let client = HyperClient::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut request = Request::post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    client.request(request).await.unwrap()
}

async fn open_session(url: &str) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let response = post(url, None, initialize).await;
    assert_eq!(response.status(), StatusCode::OK);
    response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

/// The next SSE `data:` message of `body` holding JSON, within 5 s.
async fn next_message(body: &mut Incoming, buffer: &mut String) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let data = event.lines().find_map(|l| l.strip_prefix("data: "));
            if let Some(data) = data.filter(|d| !d.trim().is_empty()) {
                return serde_json::from_str(data).unwrap();
            }
            continue;
        }
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .expect("no SSE message within 5 s")
            .expect("the stream ended")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            buffer.push_str(&String::from_utf8_lossy(&data));
        }
    }
}

/// `tasks/get` of task `id`, a 2026-07-28 request without a session.
async fn tasks_get(url: &str, id: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tasks/get", "params": {"taskId": id,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities":
                      {"extensions": {"io.modelcontextprotocol/tasks": {}}}}}});
    modern_post(url, "tasks/get", id, body).await
}

/// A 2026-07-28 request `body` of `method` naming `name`, without a session: its answer.
async fn modern_post(url: &str, method: &str, name: &str, body: Value) -> Value {
    let client = HyperClient::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = Request::post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = client.request(request).await.unwrap();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}: {bytes:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_with_redis_access_but_not_the_keys_forges_nothing_the_fleet_believes() {
    let logs = Captured::default();
    let writer = logs.clone();
    tracing::subscriber::set_global_default(
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish(),
    )
    .unwrap();
    let redis = Redis::start();
    let a = start(instance(&redis, "a").await).await;
    let b = start(instance(&redis, "b").await).await;
    let forger = stores(&redis).await;
    let idle = Duration::from_secs(60);
    let ping = |session: String| {
        let url = b.url.clone();
        async move {
            let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
            post(&url, Some(&session), ping).await.status()
        }
    };

    // 1. A session record: the forger's own session's record, put under a victim's id (the
    // record names who may use the session), and a record written as plain JSON.
    let (victim, own, plain) = (
        open_session(&a.url).await,
        open_session(&a.url).await,
        open_session(&a.url).await,
    );
    assert_eq!(ping(victim.clone()).await, StatusCode::OK);
    let sessions = forger.session_store();
    let own_record = sessions.get(&own, idle).await.unwrap().unwrap();
    sessions.put(&victim, &own_record, idle).await.unwrap();
    assert_eq!(ping(victim.clone()).await, StatusCode::NOT_FOUND);
    let written = json!({"protocolVersion": "2025-11-25", "capabilities": {}});
    sessions
        .put(&plain, written.to_string().as_bytes(), idle)
        .await
        .unwrap();
    assert_eq!(ping(plain.clone()).await, StatusCode::NOT_FOUND);
    assert_eq!(ping(own.clone()).await, StatusCode::OK, "an honest session");

    // 2. A bus answer: the forger answers the question instance a asked, on a's channel.
    let session = open_session(&a.url).await;
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "roots", "arguments": {}}});
    let mut body = post(&a.url, Some(&session), call).await.into_body();
    let mut buffer = String::new();
    let question = next_message(&mut body, &mut buffer).await;
    assert_eq!(question["method"], "roots/list", "{question}");
    let asked = question["id"].as_str().unwrap().to_owned();
    let asker = asked.rsplit_once(':').unwrap().0;
    let forged = json!({"from": "b~00000000", "session": session, "message":
        {"jsonrpc": "2.0", "id": asked, "result": {"roots": [{"uri": "file:///forged"}]}}});
    let channel = mcp_server_core::fleet::answers_channel(asker);
    let heard = forger
        .bus()
        .publish(&channel, forged.to_string().as_bytes())
        .await
        .unwrap();
    assert_eq!(heard, 1, "instance a listens on its answers channel");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let answer = json!({"jsonrpc": "2.0", "id": asked, "result": {"roots": [
        {"uri": "file:///x", "name": "x"}, {"uri": "file:///y", "name": "y"}]}});
    let response = post(&b.url, Some(&session), answer).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let result = next_message(&mut body, &mut buffer).await;
    assert_eq!(
        result["result"]["content"][0]["text"], "2 root(s)",
        "{result}"
    );

    // 3. A task replay: a task of the idempotent tool whose worker died, with a replay the
    // forger wrote. The fleet's sweep takes it and fails it instead of running it.
    let tasks = forger.task_store();
    let now = mcp_server_core::tasks::system_now_ms();
    tasks
        .create(TaskRecord {
            id: "forged-task".into(),
            owner: None,
            client_support: Default::default(),
            status_message: None,
            created_at_ms: now,
            last_updated_at_ms: now,
            ttl_ms: Some(60_000),
            poll_interval_ms: Some(100),
            outstanding: Default::default(),
            answers: Default::default(),
            used_keys: Default::default(),
            cancel_requested: false,
            terminal: None,
            lease: None,
        })
        .await
        .unwrap();
    assert!(
        tasks
            .claim("forged-task", "dead~00000000", now + 100)
            .await
            .unwrap()
    );
    let replay = json!({"tool": "reindex", "arguments": {}, "protocolVersion": "2026-07-28",
        "capabilities": {}, "answered": {}, "runs": 1});
    assert!(
        tasks
            .set_replay("forged-task", replay.to_string().into_bytes())
            .await
            .unwrap()
    );
    // Polled through instance b, as its client would (the first task request starts the
    // instance's sweep).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let failed = loop {
        let got = tasks_get(&b.url, "forged-task").await;
        if got["result"]["status"] != "working" {
            break got;
        }
        assert!(tokio::time::Instant::now() < deadline, "never swept: {got}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
    let why = failed["result"]["statusMessage"].as_str().unwrap();
    assert!(
        why.ends_with(
            "and it cannot run again: its replay is not sealed with this server's keys for this task"
        ),
        "{why}"
    );
    assert_eq!(
        tasks
            .get("forged-task")
            .await
            .unwrap()
            .unwrap()
            .terminal
            .map(|t| matches!(t, Terminal::Failed(_))),
        Some(true)
    );

    // 4. The answer to a question a task asked: the victim's task waits for its consent, and
    // the forger writes a "yes" into the task store.
    let call = json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call",
        "params": {"name": "confirm", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities":
                {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}}}});
    let created = modern_post(&a.url, "tools/call", "confirm", call).await;
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while tasks_get(&b.url, &task).await["result"]["inputRequests"]["q1"].is_null() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task never asked"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let yes = json!({"action": "accept", "content": {"ok": true}});
    tasks
        .resolve_inputs(&task, [("q1".to_owned(), yes)].into())
        .await
        .unwrap();
    let ended = loop {
        let got = tasks_get(&b.url, &task).await;
        if got["result"]["status"] != "working" && got["result"]["status"] != "input_required" {
            break got;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task never ended: {got}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let text = ended.to_string();
    assert!(
        !text.contains("proceeded"),
        "the forged consent was taken: {text}"
    );
    assert!(
        text.contains("the answer to 'q1' in the task store is not sealed with this server's keys"),
        "{text}"
    );

    // Each refusal is in the log, at warn, naming what was refused and never its content.
    let log = logs.text();
    for line in [
        r#"item="a session record""#,
        r#"item="a bus message""#,
        r#"item="a task's replay""#,
        "a task's answer that is not sealed was refused",
    ] {
        assert!(log.contains(line), "{line} is not logged:\n{log}");
    }
    assert!(!log.contains("file:///forged"), "{log}");
    a.shutdown().await;
    b.shutdown().await;
}
