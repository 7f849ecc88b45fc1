//! The Redis stores against a real `redis-server` that each test starts on a free loopback
//! port (Debian package `redis-server`; `.ci/run` installs it): the seen-store, the SSE
//! history, the task store (two "instances" = two connections sharing one Redis, a change on
//! one waking the other's watcher, a dead worker's task failed when its lease lapses), two task
//! engines finishing one task between them, and Redis going away (errors, not hangs).

use std::sync::Arc;
use std::time::Duration;

use mcp_server_core::events::{EventStore, EventStoreError};
use mcp_server_core::registry::{ElicitationResult, McpServer, ToolDef};
use mcp_server_core::tasks::{
    Lease, StoreError, TaskConfig, TaskRecord, TaskStore, TaskSupport, Terminal,
};
use mcp_server_core::{MemoryConnection, Service, TransportContext};
use mcp_state_seal::SeenStore;
use mcp_store_redis::{RedisConfig, RedisSeenStore, RedisStores};
use mcp_types::JsonRpcMessage;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[path = "support/redis_server.rs"]
mod redis_server;
use redis_server::{RedisServer as Redis, free_port};

async fn stores(redis: &Redis, prefix: &str) -> RedisStores {
    RedisStores::connect(RedisConfig::new(redis.url()).prefix(prefix))
        .await
        .unwrap()
}

/// A replay guard whose second uses of a live owner's claim wait 2 s (the default, 35 s, is
/// made to outlast the default liveness TTL of 30 s).
async fn guard(redis: &Redis, prefix: &str) -> RedisSeenStore {
    let config = RedisConfig::new(redis.url())
        .prefix(prefix)
        .takeover_wait(Duration::from_secs(2));
    RedisStores::connect(config).await.unwrap().seen_store()
}

/// A replay guard with the short window of the first design (liveness 1.5 s, heartbeat
/// 300 ms, takeover wait 2 s), to see a dead owner's claim taken over without waiting 30 s.
async fn quick_guard(redis: &Redis, prefix: &str) -> RedisSeenStore {
    let config = RedisConfig::new(redis.url())
        .prefix(prefix)
        .liveness_ttl(Duration::from_millis(1500))
        .heartbeat_interval(Duration::from_millis(300))
        .takeover_wait(Duration::from_secs(2));
    RedisStores::connect(config).await.unwrap().seen_store()
}

fn now_ms() -> u64 {
    mcp_server_core::tasks::system_now_ms()
}

fn record(id: &str, ttl_ms: Option<u64>) -> TaskRecord {
    let now = now_ms();
    TaskRecord {
        id: id.into(),
        owner: Some("alice".into()),
        client_support: Default::default(),
        status_message: None,
        created_at_ms: now,
        last_updated_at_ms: now,
        ttl_ms,
        poll_interval_ms: Some(100),
        outstanding: Default::default(),
        answers: Default::default(),
        used_keys: Default::default(),
        cancel_requested: false,
        terminal: None,
        lease: None,
    }
}

fn note(n: u64) -> JsonRpcMessage {
    JsonRpcMessage::from_value(
        &json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": "t", "progress": n}}),
    )
    .unwrap()
}

#[tokio::test]
async fn a_state_is_used_once_across_instances_and_refused_when_redis_is_gone() {
    let redis = Redis::start();
    let a = guard(&redis, "fleet").await;
    let b = guard(&redis, "fleet").await;
    let other_fleet = guard(&redis, "other").await;
    let expires = (now_ms() / 1000 + 600) as f64;
    assert!(a.first_use("jti-1", expires).await);
    assert!(
        !b.first_use("jti-1", expires).await,
        "replayed on another instance"
    );
    assert!(!a.first_use("jti-1", expires).await);
    assert!(
        other_fleet.first_use("jti-1", expires).await,
        "prefixes are separate"
    );
    drop(redis);
    // Fail closed, and within the deadline rather than hanging.
    let refused = tokio::time::timeout(Duration::from_secs(30), a.first_use("jti-2", expires))
        .await
        .expect("the seen-store hung with Redis gone");
    assert!(!refused);
}

/// Whether the liveness key of `owner` is still in Redis.
async fn alive(redis: &Redis, prefix: &str, owner: &str) -> bool {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let n: i64 = redis::cmd("EXISTS")
        .arg(format!("{prefix}:alive:{owner}"))
        .query_async(&mut conn)
        .await
        .unwrap();
    n == 1
}

#[tokio::test]
async fn a_done_state_is_refused_on_another_instance_even_after_its_owner_died() {
    let redis = Redis::start();
    let a = quick_guard(&redis, "fleet").await;
    let b = quick_guard(&redis, "fleet").await;
    let expires = (now_ms() / 1000 + 600) as f64;
    assert!(a.first_use("jti-done", expires).await);
    a.finished("jti-done", expires).await;
    let owner = a.owner().to_owned();
    drop(a);
    for _ in 0..100 {
        if !alive(&redis, "fleet", &owner).await {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        !alive(&redis, "fleet", &owner).await,
        "the liveness key never lapsed"
    );
    assert!(
        !b.first_use("jti-done", expires).await,
        "a finished state was taken over after its owner died"
    );
}

#[tokio::test]
async fn a_state_claimed_by_a_live_owner_is_refused_on_another_instance() {
    let redis = Redis::start();
    let a = guard(&redis, "fleet").await;
    let b = guard(&redis, "fleet").await;
    let expires = (now_ms() / 1000 + 600) as f64;
    assert!(a.first_use("jti-live", expires).await);
    // b waits out its takeover wait (2 s) while a's heartbeat keeps it alive, then refuses.
    assert!(
        !b.first_use("jti-live", expires).await,
        "taken over from a live owner"
    );
    assert!(alive(&redis, "fleet", a.owner()).await);
    assert!(
        !a.first_use("jti-live", expires).await,
        "replayed on its owner"
    );
    // Once a finished it, the state is refused whoever asks.
    a.finished("jti-live", expires).await;
    assert!(!b.first_use("jti-live", expires).await);
}

#[tokio::test]
async fn a_state_whose_owner_died_unfinished_is_taken_over_once() {
    let redis = Redis::start();
    let a = quick_guard(&redis, "fleet").await;
    let b = quick_guard(&redis, "fleet").await;
    let c = quick_guard(&redis, "fleet").await;
    let expires = (now_ms() / 1000 + 600) as f64;
    assert!(a.first_use("jti-crash", expires).await);
    // a dies before it answered: its heartbeat stops, its liveness lapses within 1.5 s, which
    // b's wait for the re-sent request covers.
    drop(a);
    assert!(
        b.first_use("jti-crash", expires).await,
        "the re-sent request of a dead instance was refused"
    );
    assert!(!b.first_use("jti-crash", expires).await, "accepted twice");
    assert!(
        !c.first_use("jti-crash", expires).await,
        "taken over from b, which is alive"
    );
    b.finished("jti-crash", expires).await;
    drop(b);
    assert!(!c.first_use("jti-crash", expires).await);
}

/// Security review X12: a single-use handle is spent in one write (done at once, with the
/// state's expiry), which no other instance can take over, even once this one is gone.
#[tokio::test]
async fn a_spent_handle_is_done_at_once_for_every_instance() {
    let redis = Redis::start();
    let a = stores(&redis, "fleet").await.seen_store();
    let b = stores(&redis, "fleet").await.seen_store();
    let expires = (now_ms() / 1000 + 600) as f64;
    assert!(a.spend("jti-handle", expires).await);
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let stored: String = redis::cmd("GET")
        .arg("fleet:seen:jti-handle")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(stored, "d", "done, not a claim");
    drop(a);
    assert!(!b.spend("jti-handle", expires).await);
    assert!(!b.first_use("jti-handle", expires).await);
}

#[tokio::test]
async fn seen_keys_and_liveness_keys_expire() {
    let redis = Redis::start();
    let a = stores(&redis, "fleet").await.seen_store();
    let expires = (now_ms() / 1000 + 600) as f64;
    assert!(a.first_use("jti-ttl", expires).await);
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    for key in [
        "fleet:seen:jti-ttl".to_owned(),
        format!("fleet:alive:{}", a.owner()),
    ] {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(ttl > 0, "{key} has no TTL ({ttl})");
    }
    a.finished("jti-ttl", expires).await;
    let ttl: i64 = redis::cmd("PTTL")
        .arg("fleet:seen:jti-ttl")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(ttl > 0, "a done state lost its TTL ({ttl})");
}

#[tokio::test]
async fn sse_history_replays_after_an_id_ends_and_expires() {
    let redis = Redis::start();
    let store = stores(&redis, "t").await.event_store();
    for n in 1..=3 {
        assert_eq!(store.append("s1", "p1", &note(n)).await.unwrap(), n);
    }
    let replay = store
        .read_after("s1", "p1", 1, Duration::ZERO)
        .await
        .unwrap();
    let numbers: Vec<u64> = replay.events.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, [2, 3]);
    assert_eq!(replay.events[1].1.to_string(), note(3).to_string());
    assert!(!replay.finished);
    // A reader at the end is woken by the next event (polling under its wait).
    let reader = {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .read_after("s1", "p1", 3, Duration::from_secs(20))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    store.append("s1", "p1", &note(4)).await.unwrap();
    let woke = reader.await.unwrap().unwrap();
    assert_eq!(woke.events.len(), 1);
    assert_eq!(woke.events[0].0, 4);
    store.finish("s1", "p1").await.unwrap();
    let end = store
        .read_after("s1", "p1", 4, Duration::from_secs(20))
        .await
        .unwrap();
    assert!(end.events.is_empty() && end.finished);
    assert!(matches!(
        store.read_after("s1", "p9", 0, Duration::ZERO).await,
        Err(EventStoreError::Gone)
    ));
    assert!(matches!(
        store.read_after("s1", "p1", 7, Duration::ZERO).await,
        Err(EventStoreError::Gone)
    ));
    store.expire("s1").await.unwrap();
    assert!(matches!(
        store.read_after("s1", "p1", 0, Duration::ZERO).await,
        Err(EventStoreError::Gone)
    ));
}

#[tokio::test]
async fn sse_history_keeps_a_bounded_tail_with_a_ttl() {
    let redis = Redis::start();
    let config = RedisConfig::new(redis.url())
        .prefix("cap")
        .max_events_per_stream(2)
        .event_retention(Duration::from_secs(60));
    let store = RedisStores::connect(config).await.unwrap().event_store();
    for n in 1..=5 {
        store.append("s", "g", &note(n)).await.unwrap();
    }
    assert!(matches!(
        store.read_after("s", "g", 2, Duration::ZERO).await,
        Err(EventStoreError::Gone)
    ));
    let tail = store.read_after("s", "g", 3, Duration::ZERO).await.unwrap();
    let numbers: Vec<u64> = tail.events.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, [4, 5]);
    let client = redis::Client::open(redis.url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    for key in ["cap:ev:s:g", "cap:evn:s:g", "cap:evs:s"] {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut connection)
            .await
            .unwrap();
        assert!(ttl > 0 && ttl <= 60_000, "{key}: {ttl}");
    }
}

#[tokio::test]
async fn a_change_on_one_instance_wakes_the_watcher_on_another() {
    let redis = Redis::start();
    let a = stores(&redis, "w").await.task_store();
    let b = stores(&redis, "w").await.task_store();
    a.create(record("t1", Some(600_000))).await.unwrap();
    let mut feed = a.watch("t1").unwrap();
    // Let the subscriber connect before the change is published.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut requests = mcp_types::mrtr::InputRequests::new();
    requests.insert(
        "q1".into(),
        serde_json::from_value(json!({"method": "elicitation/create", "params": {
            "message": "Word?", "requestedSchema": {"type": "object", "properties": {}}}}))
        .unwrap(),
    );
    a.add_input_requests("t1", requests).await.unwrap();
    let delivered = b
        .resolve_inputs(
            "t1",
            [("q1".to_owned(), json!({"action": "accept", "content": {}}))].into(),
        )
        .await
        .unwrap();
    assert_eq!(delivered, ["q1"]);
    tokio::time::timeout(Duration::from_secs(10), feed.changed())
        .await
        .expect("the other instance's change did not wake the watcher")
        .unwrap();
    assert_eq!(
        a.take_answer("t1", "q1").await.unwrap(),
        Some(json!({"action": "accept", "content": {}}))
    );
    b.request_cancel("t1").await.unwrap();
    assert!(a.get("t1").await.unwrap().unwrap().cancel_requested);
    assert!(b.finish("t1", Terminal::Cancelled).await.unwrap());
    assert!(
        !a.finish("t1", Terminal::Cancelled).await.unwrap(),
        "first writer wins"
    );
    assert!(matches!(
        a.set_status_message("t1", Some("late".into())).await,
        Err(StoreError::Finished)
    ));
}

#[tokio::test]
async fn a_task_whose_worker_died_fails_when_its_lease_lapses() {
    let redis = Redis::start();
    let a = stores(&redis, "l").await.task_store();
    let b = stores(&redis, "l").await.task_store();
    a.create(record("t2", Some(600_000))).await.unwrap();
    let until = now_ms() + 200;
    assert!(a.claim("t2", "worker-a", until).await.unwrap());
    assert!(
        !b.claim("t2", "worker-b", until + 10_000).await.unwrap(),
        "the lease holds"
    );
    assert_eq!(
        a.get("t2").await.unwrap().unwrap().lease,
        Some(Lease {
            worker: "worker-a".into(),
            until_ms: until
        })
    );
    // worker-a stops renewing (its process died); another instance's sweep fails the task.
    tokio::time::sleep(Duration::from_millis(300)).await;
    b.expire(now_ms()).await.unwrap();
    let failed = b.get("t2").await.unwrap().unwrap();
    match &failed.terminal {
        Some(Terminal::Failed(e)) => {
            assert_eq!(
                e.message,
                "The worker running this task (worker-a) was lost"
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(failed.lease, None);
}

#[tokio::test]
async fn the_fleet_wide_cap_refuses_a_task_and_every_task_key_has_a_ttl() {
    let redis = Redis::start();
    let config = RedisConfig::new(redis.url()).prefix("cap").max_tasks(2);
    let store = RedisStores::connect(config).await.unwrap().task_store();
    store.create(record("c1", Some(60_000))).await.unwrap();
    store.create(record("c2", None)).await.unwrap();
    assert_eq!(
        store.create(record("c3", Some(60_000))).await,
        Err(StoreError::Full { limit: 2 })
    );
    let client = redis::Client::open(redis.url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    for (key, most) in [("cap:task:c1", 60_000), ("cap:task:c2", 86_400_000)] {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut connection)
            .await
            .unwrap();
        assert!(ttl > 0 && ttl <= most, "{key}: {ttl}");
    }
}

/// Review W9: one owner gets its share of the fleet's tasks (before, one principal's tasks
/// could fill the whole fleet-wide cap and lock everyone out until they expired); tasks without
/// an owner count against the fleet's cap only.
#[tokio::test]
async fn one_owner_holds_its_share_of_the_fleets_tasks_and_no_more() {
    let redis = Redis::start();
    let config = RedisConfig::new(redis.url())
        .prefix("own")
        .max_tasks(10)
        .max_tasks_per_owner(2);
    let store = RedisStores::connect(config).await.unwrap().task_store();
    let owned = |id: &str, owner: &str| TaskRecord {
        owner: Some(owner.to_owned()),
        ..record(id, Some(60_000))
    };
    store.create(owned("a1", "alice")).await.unwrap();
    store.create(owned("a2", "alice")).await.unwrap();
    assert_eq!(
        store.create(owned("a3", "alice")).await,
        Err(StoreError::OwnerFull { limit: 2 })
    );
    store.create(owned("b1", "bob")).await.unwrap();
    for i in 0..3 {
        let anonymous = TaskRecord {
            owner: None,
            ..record(&format!("n{i}"), Some(60_000))
        };
        store.create(anonymous).await.unwrap();
    }
    assert!(
        store.get("a3").await.unwrap().is_none(),
        "a refused task writes nothing"
    );
    let client = redis::Client::open(redis.url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let ttl: i64 = redis::cmd("PTTL")
        .arg("own:owner-tasks:alice")
        .query_async(&mut connection)
        .await
        .unwrap();
    assert!(
        ttl > 0 && ttl <= 60_000,
        "the owner's index expires with its tasks: {ttl}"
    );
}

#[tokio::test]
async fn losing_redis_gives_errors_within_the_deadline_and_reconnects_after() {
    let redis = Redis::start();
    let config = RedisConfig::new(redis.url())
        .prefix("loss")
        .command_timeout(Duration::from_millis(500));
    let stores = RedisStores::connect(config).await.unwrap();
    let tasks = stores.task_store();
    let events = stores.event_store();
    tasks.create(record("r1", Some(600_000))).await.unwrap();
    let port = redis.stop();
    let failed = tokio::time::timeout(Duration::from_secs(30), tasks.get("r1"))
        .await
        .expect("a task read hung with Redis gone");
    match failed {
        Err(StoreError::Backend(why)) => assert!(why.starts_with("Redis HMGET task: "), "{why}"),
        other => panic!("{other:?}"),
    }
    let failed = tokio::time::timeout(Duration::from_secs(30), events.append("s", "p1", &note(1)))
        .await
        .expect("an SSE append hung with Redis gone");
    match failed {
        Err(EventStoreError::Unavailable(why)) => assert!(why.starts_with("Redis "), "{why}"),
        other => panic!("{other:?}"),
    }
    // Redis is back (empty: no persistence); the same stores work again.
    let _redis = Redis::start_on(port);
    let mut back = None;
    for _ in 0..100 {
        match tasks.create(record("r2", Some(600_000))).await {
            Ok(()) => {
                back = Some(());
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    back.expect("the store did not reconnect");
    assert!(tasks.get("r2").await.unwrap().is_some());

    // Connecting to nothing is a clear error at start-up.
    let nothing = RedisStores::connect(
        RedisConfig::new(format!("redis://127.0.0.1:{}/", free_port()))
            .command_timeout(Duration::from_millis(500))
            .reconnect_attempts(0),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        nothing.starts_with("cannot connect to Redis: ")
            || nothing.starts_with("Redis did not accept"),
        "{nothing}"
    );
}

#[derive(Clone, Deserialize, JsonSchema)]
struct Word {
    word: String,
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// An instance of a fleet: a tool that runs as a task and asks one question.
fn instance(store: Arc<dyn TaskStore>) -> Service {
    let ask = ToolDef::new("ask")
        .arguments::<NoArgs>()
        .task(TaskSupport::Required)
        .handler(|ctx, _: NoArgs| async move {
            match ctx.elicit::<Word>("Which word?").await {
                Ok(ElicitationResult::Accepted(w)) => Ok(format!("got {}", w.word)),
                Ok(_) => Err("declined".to_owned()),
                Err(e) => Err(e.message),
            }
        });
    // The instances of a fleet share their state keys: an answer one takes is sealed with
    // them, and the other opens it.
    McpServer::new("fleet")
        .tool(ask)
        .tasks(
            TaskConfig::new()
                .shared_store(store)
                .poll_interval(Duration::from_millis(50)),
        )
        .request_state_security(
            mcp_state_seal::RequestStateSecurity::keys(["0123456789abcdef0123456789abcdef"])
                .unwrap(),
        )
        .into_service()
        .unwrap()
}

async fn modern(conn: &mut MemoryConnection, id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
    });
    let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    assert!(conn.send_raw(request.to_string().into_bytes()));
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), conn.recv())
            .await
            .expect("no answer within 10 s")
            .expect("closed")
            .to_value();
        if message.get("method").is_none() && message["id"] == json!(id) {
            return message;
        }
    }
}

#[tokio::test]
async fn a_task_started_on_one_instance_is_answered_and_finished_through_another() {
    let redis = Redis::start();
    let a = instance(Arc::new(stores(&redis, "engine").await.task_store()));
    let b = instance(Arc::new(stores(&redis, "engine").await.task_store()));
    let mut on_a = MemoryConnection::connect(&a, TransportContext::default());
    let mut on_b = MemoryConnection::connect(&b, TransportContext::default());
    let created = modern(
        &mut on_a,
        1,
        "tools/call",
        json!({"name": "ask", "arguments": {}}),
    )
    .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let mut asked = None;
    for n in 0..200 {
        let got = modern(&mut on_b, 10 + n, "tasks/get", json!({"taskId": id})).await;
        if got["result"]["status"] == "input_required" {
            asked = Some(got);
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let asked = asked.expect("instance B never saw the task's question");
    assert_eq!(
        asked["result"]["inputRequests"]["q1"]["params"]["message"],
        "Which word?"
    );
    let updated = modern(
        &mut on_b,
        500,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"q1": {"action": "accept", "content": {"word": "fleet"}}}}),
    )
    .await;
    assert!(updated.get("error").is_none(), "{updated}");
    let mut done = None;
    for n in 0..200 {
        let got = modern(&mut on_b, 600 + n, "tasks/get", json!({"taskId": id})).await;
        if got["result"]["status"] == "completed" {
            done = Some(got);
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let done = done.expect("the worker on A never finished after B's update");
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "got fleet",
        "{done}"
    );
}

/// `INFO commandstats` as (command, calls), the commands that ran since the last
/// `CONFIG RESETSTAT`, a script's own calls included.
async fn command_calls(redis: &Redis) -> std::collections::BTreeMap<String, u64> {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .unwrap();
    info.lines()
        .filter_map(|line| {
            let (name, stats) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = stats.split(',').find_map(|s| s.strip_prefix("calls="))?;
            (name != "info" && name != "config|resetstat")
                .then(|| (name.to_owned(), calls.parse().unwrap()))
        })
        .collect()
}

async fn reset_stats(redis: &Redis) {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut conn)
        .await
        .unwrap();
}

fn calls(pairs: &[(&str, u64)]) -> std::collections::BTreeMap<String, u64> {
    pairs.iter().map(|(n, c)| ((*n).to_owned(), *c)).collect()
}

/// Review W17: a task is created by one script (the record, its place in the index of live
/// tasks and in the lease index, or nothing), so a crash or a lost connection between
/// commands cannot leave a record that no cap counts and no sweep finds. Before, creation was
/// five commands (ZREMRANGEBYSCORE, ZCARD, SET, ZADD, ZADD) sent one after the other.
#[tokio::test]
async fn a_task_is_created_by_one_script_and_a_refused_one_writes_nothing() {
    let redis = Redis::start();
    let config = RedisConfig::new(redis.url()).prefix("mk").max_tasks(2);
    let store = RedisStores::connect(config).await.unwrap().task_store();
    // The first creation loads the script.
    store.create(record("warm", Some(60_000))).await.unwrap();
    reset_stats(&redis).await;
    let mut leased = record("leased", Some(60_000));
    let until = now_ms() + 30_000;
    leased.lease = Some(Lease {
        worker: "w".into(),
        until_ms: until,
    });
    store.create(leased.clone()).await.unwrap();
    assert_eq!(
        command_calls(&redis).await,
        calls(&[
            ("evalsha", 1),
            // The fleet's index, then the owner's (review W9).
            ("zremrangebyscore", 2),
            ("zcard", 2),
            ("exists", 1),
            ("hset", 2),
            ("pttl", 1),
            ("pexpireat", 2),
            ("zadd", 3),
        ]),
        "one script call, and the commands it ran"
    );
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let score = async |conn: &mut redis::aio::MultiplexedConnection, key: &str, id: &str| {
        let score: Option<u64> = redis::cmd("ZSCORE")
            .arg(key)
            .arg(id)
            .query_async(conn)
            .await
            .unwrap();
        score
    };
    assert_eq!(
        score(&mut conn, "mk:tasks", "leased").await,
        Some(leased.created_at_ms + 60_000)
    );
    assert_eq!(
        score(&mut conn, "mk:task-leases", "leased").await,
        Some(until)
    );
    assert_eq!(
        store.get("leased").await.unwrap().unwrap().lease,
        leased.lease
    );

    // Refused at the cap: nothing written, the indexes as they were.
    let keys = async |conn: &mut redis::aio::MultiplexedConnection| {
        let mut keys: Vec<String> = redis::cmd("KEYS")
            .arg("mk:*")
            .query_async(conn)
            .await
            .unwrap();
        keys.sort();
        keys
    };
    let before = keys(&mut conn).await;
    assert_eq!(
        before,
        [
            "mk:owner-tasks:alice",
            "mk:task-leases",
            "mk:task:leased",
            "mk:task:warm",
            "mk:tasks"
        ]
    );
    reset_stats(&redis).await;
    assert_eq!(
        store.create(record("third", Some(60_000))).await,
        Err(StoreError::Full { limit: 2 })
    );
    assert_eq!(
        command_calls(&redis).await,
        calls(&[("evalsha", 1), ("zremrangebyscore", 1), ("zcard", 1)])
    );
    assert_eq!(keys(&mut conn).await, before);
    assert_eq!(score(&mut conn, "mk:tasks", "third").await, None);
}

/// `INFO stats` field `field` as a number.
async fn stat(redis: &Redis, field: &str) -> u64 {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO")
        .arg("stats")
        .query_async(&mut conn)
        .await
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {field} in INFO stats"))
        .trim()
        .parse()
        .unwrap()
}

/// Review W10: a running task costs its instance one small script call to Redis per lease
/// renewal (the default lease of 30 s is renewed every second), and a task waiting for an
/// answer waits on the change channel instead of reading its record every 500 ms. Before, each
/// second cost a GET of the record and a compare-and-set that shipped it twice (plus a ZADD)
/// to renew the lease, another GET to look for a cancel, and two GETs for the answer.
#[tokio::test]
async fn running_tasks_cost_one_small_script_call_each_per_renewal() {
    const TASKS: u64 = 10;
    const WINDOW_S: u64 = 3;
    let redis = Redis::start();
    let store: Arc<dyn TaskStore> = Arc::new(stores(&redis, "cost").await.task_store());
    let ask = ToolDef::new("ask")
        .arguments::<NoArgs>()
        .task(TaskSupport::Required)
        .handler(|ctx, _: NoArgs| async move {
            match ctx.elicit::<Word>("Which word?").await {
                Ok(ElicitationResult::Accepted(w)) => Ok(w.word),
                _ => Err("no word".to_owned()),
            }
        });
    let service = McpServer::new("cost")
        .tool(ask)
        .tasks(TaskConfig::new().shared_store(store.clone()))
        .into_service()
        .unwrap();
    let mut conn = MemoryConnection::connect(&service, TransportContext::default());
    let mut ids = Vec::new();
    for n in 0..TASKS {
        let created = modern(
            &mut conn,
            n + 1,
            "tools/call",
            json!({"name": "ask", "arguments": {}}),
        )
        .await;
        ids.push(created["result"]["taskId"].as_str().unwrap().to_owned());
    }
    for id in &ids {
        let mut asking = false;
        for _ in 0..200 {
            let record = store.get(id).await.unwrap().unwrap();
            if !record.outstanding.is_empty() {
                asking = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert!(asking, "task {id} never asked");
    }
    reset_stats(&redis).await;
    let bytes_in = stat(&redis, "total_net_input_bytes").await;
    let bytes_out = stat(&redis, "total_net_output_bytes").await;
    tokio::time::sleep(Duration::from_secs(WINDOW_S)).await;
    let calls = command_calls(&redis).await;
    let per_task_s = |n: u64| n as f64 / (TASKS * WINDOW_S) as f64;
    let bytes_in = stat(&redis, "total_net_input_bytes").await - bytes_in;
    let bytes_out = stat(&redis, "total_net_output_bytes").await - bytes_out;
    eprintln!(
        "{TASKS} tasks waiting for an answer, {WINDOW_S} s: {calls:?}; per task and second: \
         {:.2} script calls, {:.2} GET, {:.2} HMGET, {:.0} bytes in, {:.0} bytes out",
        per_task_s(calls.get("evalsha").copied().unwrap_or(0)),
        per_task_s(calls.get("get").copied().unwrap_or(0)),
        per_task_s(calls.get("hmget").copied().unwrap_or(0)),
        per_task_s(bytes_in),
        per_task_s(bytes_out),
    );
    let scripts = calls.get("evalsha").copied().unwrap_or(0);
    assert!(
        (TASKS * (WINDOW_S - 1)..=TASKS * (WINDOW_S + 1)).contains(&scripts),
        "one renewal per task and second: {calls:?}"
    );
    assert_eq!(calls.get("get"), None, "no record read by GET: {calls:?}");
    assert!(
        calls.get("hmget").copied().unwrap_or(0) <= TASKS,
        "at most one look at each record (the 10 s resync): {calls:?}"
    );
    assert!(
        per_task_s(bytes_in) < 400.0,
        "{:.0} bytes a second per task",
        per_task_s(bytes_in)
    );
}

/// Review W10: one instance of a fleet sweeps per interval; the others skip while the lock
/// `{prefix}:task-sweep` lives (nine tenths of the interval), then the next to try sweeps.
#[tokio::test]
async fn one_instance_of_the_fleet_sweeps_per_interval() {
    let redis = Redis::start();
    let config = RedisConfig::new(redis.url())
        .prefix("sw")
        .task_sweep_interval(Duration::from_millis(1000));
    let a = RedisStores::connect(config.clone())
        .await
        .unwrap()
        .task_store();
    let b = RedisStores::connect(config).await.unwrap().task_store();
    a.create(record("t", Some(600_000))).await.unwrap();
    assert!(a.claim("t", "worker-a", now_ms() + 100).await.unwrap());
    assert_eq!(a.expire(now_ms()).await.unwrap(), Vec::<String>::new());
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The lease lapsed, but a swept less than an interval ago: b skips.
    b.expire(now_ms()).await.unwrap();
    assert_eq!(b.get("t").await.unwrap().unwrap().terminal, None);
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let lock: i64 = redis::cmd("PTTL")
        .arg("sw:task-sweep")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!((0..=900).contains(&lock), "{lock}");
    tokio::time::sleep(Duration::from_millis(lock as u64 + 50)).await;
    b.expire(now_ms()).await.unwrap();
    let failed = b.get("t").await.unwrap().unwrap();
    assert_eq!(
        failed.status_message.as_deref(),
        Some("The worker running this task (worker-a) was lost")
    );
    assert_eq!(failed.lease, None);
}

/// Review W12: an owner that is alive but slow (its runtime stalls 3.5 s, more than twice
/// the old liveness TTL of 1.5 s, within the new one of 30 s) keeps its claim: another
/// instance that receives the same state meanwhile refuses it instead of running it a second
/// time. And the slow owner claims nothing new until its heartbeat has succeeded again.
/// Before, its liveness key lapsed after 1.5 s and the other instance took the claim over.
#[test]
fn a_slow_owner_is_not_taken_over_and_claims_nothing_until_its_heartbeat_is_back() {
    let redis = Redis::start();
    let url = redis.url();
    let expires = (now_ms() / 1000 + 600) as f64;
    // Instance B on its own runtime (its own thread), as on another machine: at 2 s into A's
    // stall it receives the state A claimed.
    let (claimed_tx, claimed_rx) = std::sync::mpsc::channel::<()>();
    let b = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let config = RedisConfig::new(url)
                .prefix("slow")
                .takeover_wait(Duration::from_secs(2));
            let b = RedisStores::connect(config).await.unwrap().seen_store();
            tokio::task::spawn_blocking(move || claimed_rx.recv().unwrap())
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_secs(2)).await;
            b.first_use("jti-slow", expires).await
        })
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let a = runtime.block_on(async {
        let config = RedisConfig::new(redis.url())
            .prefix("slow")
            .takeover_wait(Duration::from_secs(2));
        let a = RedisStores::connect(config).await.unwrap().seen_store();
        assert!(a.first_use("jti-slow", expires).await);
        a
    });
    claimed_tx.send(()).unwrap();
    // A's runtime stalls: its heartbeat does not run for 3.5 s (and still not while B ends).
    std::thread::sleep(Duration::from_millis(3500));
    assert!(
        !b.join().unwrap(),
        "B took over the state of a slow, live owner"
    );
    runtime.block_on(async {
        // Checked before anything else runs on A's runtime, its heartbeat included.
        assert!(
            !a.first_use("jti-new", expires).await,
            "claimed with a heartbeat seconds late"
        );
        assert!(
            alive(&redis, "slow", a.owner()).await,
            "A looked dead after its stall"
        );
        // Once its heartbeat succeeds again, A claims again.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(a.first_use("jti-new", expires).await);
    });
}

/// Session `s`'s stream names (`p1`, …) that Redis holds.
async fn streams_of(redis: &Redis, prefix: &str, session: &str) -> Vec<String> {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let pattern = format!("{prefix}:evn:{session}:*");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(&pattern)
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut streams: Vec<String> = keys
        .iter()
        .map(|k| k.rsplit(':').next().unwrap().to_owned())
        .collect();
    streams.sort_by_key(|s| s[1..].parse::<u64>().unwrap_or(0));
    streams
}

/// Review W11: one session keeps at most 100 streams by default (its next one evicts its
/// oldest ended stream; other sessions are untouched) and no event over 1 MiB. Before, a
/// session's streams and their events were kept without bound for the retention (30 min).
#[tokio::test]
async fn sse_history_keeps_at_most_100_streams_per_session_and_no_event_over_1_mib() {
    let redis = Redis::start();
    let store = stores(&redis, "cap").await.event_store();
    store.append("other", "g", &note(1)).await.unwrap();
    for n in 1..=100 {
        let stream = format!("p{n}");
        store.append("s", &stream, &note(n)).await.unwrap();
        if n > 50 {
            store.finish("s", &stream).await.unwrap();
        }
    }
    // p51 is the oldest ended stream: the 101st stream evicts it.
    store.append("s", "p101", &note(101)).await.unwrap();
    let mut expected: Vec<String> = (1..=101).map(|n| format!("p{n}")).collect();
    expected.remove(50);
    assert_eq!(streams_of(&redis, "cap", "s").await, expected);
    assert!(matches!(
        store.read_after("s", "p51", 0, Duration::ZERO).await,
        Err(EventStoreError::Gone)
    ));
    let kept = store
        .read_after("s", "p1", 0, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(kept.events.len(), 1);
    assert_eq!(streams_of(&redis, "cap", "other").await, ["g"]);

    // An event over 1 MiB is refused and leaves the stream as it was.
    let big =
        JsonRpcMessage::from_value(&json!({"jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "info", "data": "x".repeat(1024 * 1024)}}))
        .unwrap();
    let refused = store.append("s", "p101", &big).await.unwrap_err();
    assert_eq!(
        refused.to_string(),
        format!(
            "an event of {} bytes is over the event store's limit of 1048576 bytes",
            big.to_string().len()
        )
    );
    assert_eq!(store.append("s", "p101", &note(2)).await.unwrap(), 2);
}

/// Review W11: at its cap with no ended stream, a session's next stream evicts its oldest one.
#[tokio::test]
async fn at_its_cap_with_every_stream_running_a_session_loses_its_oldest_stream() {
    let redis = Redis::start();
    let config = RedisConfig::new(redis.url())
        .prefix("cap")
        .max_streams_per_session(3);
    let store = RedisStores::connect(config).await.unwrap().event_store();
    for n in 1..=3 {
        store.append("s", &format!("p{n}"), &note(n)).await.unwrap();
    }
    // p2 ended: it goes first, then the oldest of the running ones.
    store.finish("s", "p2").await.unwrap();
    store.append("s", "p4", &note(4)).await.unwrap();
    assert_eq!(streams_of(&redis, "cap", "s").await, ["p1", "p3", "p4"]);
    store.append("s", "p5", &note(5)).await.unwrap();
    assert_eq!(streams_of(&redis, "cap", "s").await, ["p3", "p4", "p5"]);
    // Appending to a stream it holds evicts nothing.
    store.append("s", "p3", &note(6)).await.unwrap();
    assert_eq!(streams_of(&redis, "cap", "s").await, ["p3", "p4", "p5"]);
    // Streams that expired do not count.
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: i64 = redis::cmd("DEL")
        .arg("cap:ev:s:p3")
        .arg("cap:evn:s:p3")
        .query_async(&mut conn)
        .await
        .unwrap();
    store.append("s", "p6", &note(7)).await.unwrap();
    assert_eq!(streams_of(&redis, "cap", "s").await, ["p4", "p5", "p6"]);
}

/// Review W11: a reader waiting at the end of a stream costs Redis one read a second, not
/// ten, and an append in this process wakes it at once.
#[tokio::test]
async fn a_waiting_reader_is_woken_by_the_append_and_reads_redis_once_a_second() {
    let redis = Redis::start();
    let store = stores(&redis, "wake").await.event_store();
    store.append("s", "p1", &note(1)).await.unwrap();
    // The read script is loaded by the first read.
    store
        .read_after("s", "p1", 0, Duration::ZERO)
        .await
        .unwrap();
    reset_stats(&redis).await;
    let reader = {
        let store = store.clone();
        tokio::spawn(async move {
            let replay = store
                .read_after("s", "p1", 1, Duration::from_secs(10))
                .await;
            (replay, tokio::time::Instant::now())
        })
    };
    let waiting = std::time::Instant::now();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // Once a second (the first read at once): at most one more than the seconds that passed,
    // however late this wakes up; ten a second would be fifteen.
    let reads = command_calls(&redis)
        .await
        .get("evalsha")
        .copied()
        .unwrap_or(0);
    let waited = waiting.elapsed();
    assert!(
        reads >= 1 && u128::from(reads) <= waited.as_millis() / 1000 + 2,
        "{reads} reads while waiting {waited:?}"
    );
    store.append("s", "p1", &note(2)).await.unwrap();
    let appended = tokio::time::Instant::now();
    let (replay, woke) = reader.await.unwrap();
    let replay = replay.unwrap();
    assert_eq!(replay.events.len(), 1);
    assert_eq!(replay.events[0].0, 2);
    assert!(
        woke - appended < Duration::from_millis(200),
        "{:?}",
        woke - appended
    );
}

/// An instance of a fleet whose `note` tool is limited to 3 calls a minute per principal, in
/// buckets on `redis` (its own connection, as another process would have).
async fn rate_limited_instance(redis: &Redis) -> Service {
    use mcp_server_core::policy::{Rate, RateLimit};
    let rates = stores(redis, "fleet").await.rate_store();
    McpServer::new("fleet")
        .tool(
            ToolDef::new("note")
                .arguments::<NoArgs>()
                .handler(|_ctx, _: NoArgs| async move { Ok::<_, String>("noted".to_owned()) }),
        )
        .tool_layer(
            "note",
            RateLimit::per_principal("notes", Rate::new(3, Duration::from_secs(60))).store(rates),
        )
        .into_service()
        .unwrap()
}

fn as_user(name: &str) -> TransportContext {
    TransportContext {
        principal: Some(mcp_state_seal::Principal::new("app").subject(name)),
        ..TransportContext::default()
    }
}

/// Issue #34: a rate limit on Redis is one limit for the fleet. Two instances spend one
/// principal's bucket between them (3 calls a minute: the 4th is refused wherever it lands),
/// another principal has its own, and with Redis gone the limit refuses (fails closed) within
/// the command deadline instead of letting calls through.
#[tokio::test]
async fn a_rate_limit_on_redis_is_shared_by_two_instances() {
    let redis = Redis::start();
    let a = rate_limited_instance(&redis).await;
    let b = rate_limited_instance(&redis).await;
    let mut alice_a = MemoryConnection::connect(&a, as_user("alice"));
    let mut alice_b = MemoryConnection::connect(&b, as_user("alice"));
    let mut bob_b = MemoryConnection::connect(&b, as_user("bob"));
    let call = json!({"name": "note", "arguments": {}});
    let mut answers = Vec::new();
    for i in 0..4u64 {
        let conn = if i % 2 == 0 {
            &mut alice_a
        } else {
            &mut alice_b
        };
        let reply = modern(conn, i + 1, "tools/call", call.clone()).await;
        answers.push(
            reply["result"]["content"][0]["text"]
                .as_str()
                .map_or_else(|| reply["error"]["code"].to_string(), str::to_owned),
        );
    }
    assert_eq!(answers, ["noted", "noted", "noted", "-32029"]);
    let refused = modern(&mut alice_a, 9, "tools/call", call.clone()).await;
    let retry = refused["error"]["data"]["retryAfterMs"].as_u64().unwrap();
    assert!((1..=20_000).contains(&retry), "{refused}");
    let bob = modern(&mut bob_b, 10, "tools/call", call.clone()).await;
    assert_eq!(bob["result"]["content"][0]["text"], "noted", "{bob}");

    redis.stop();
    let started = std::time::Instant::now();
    let away = modern(&mut bob_b, 11, "tools/call", call).await;
    assert_eq!(
        away["error"],
        json!({"code": -32029,
               "message": "rate limit 'notes' could not be checked (its store did not answer); try again shortly",
               "data": {"limit": "rate"}}),
        "{away}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

/// Security review X13: a record write that lands after a session ended (a subscribe being
/// stored on another instance while this one handled the DELETE) does not revive it.
#[tokio::test]
async fn a_late_record_write_does_not_revive_an_ended_session() {
    use mcp_server_core::fleet::SessionStore;
    let redis = Redis::start();
    let store = stores(&redis, "ended").await.session_store();
    let idle = Duration::from_secs(60);
    store.put("s1", b"{\"live\":1}", idle).await.unwrap();
    store
        .end("s1", b"{\"ended\":true}", Duration::from_secs(60))
        .await
        .unwrap();
    store.put("s1", b"{\"live\":2}", idle).await.unwrap();
    assert_eq!(
        store.get("s1", idle).await.unwrap(),
        Some(b"{\"ended\":true}".to_vec())
    );
    // Other sessions are written as before.
    store.put("s2", b"{\"live\":1}", idle).await.unwrap();
    assert_eq!(
        store.get("s2", idle).await.unwrap(),
        Some(b"{\"live\":1}".to_vec())
    );
}

#[tokio::test]
async fn the_session_store_keeps_a_record_for_its_idle_time_and_every_read_extends_it() {
    use mcp_server_core::fleet::SessionStore;
    let redis = Redis::start();
    let store = stores(&redis, "sessions").await.session_store();
    let idle = Duration::from_millis(600);
    assert_eq!(store.get("s1", idle).await.unwrap(), None);
    store.put("s1", b"{\"v\":1}", idle).await.unwrap();
    // Read every 300 ms for 1.2 s: each read pushes the expiry back.
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            store.get("s1", idle).await.unwrap(),
            Some(b"{\"v\":1}".to_vec())
        );
    }
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(
        store.get("s1", idle).await.unwrap(),
        None,
        "an idle record expires"
    );
    store
        .put("s2", b"x", Duration::from_secs(60))
        .await
        .unwrap();
    assert!(store.remove("s2").await.unwrap());
    assert!(!store.remove("s2").await.unwrap());
    // Another prefix is another fleet.
    let other = stores(&redis, "other").await.session_store();
    store
        .put("s3", b"x", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(other.get("s3", idle).await.unwrap(), None);
}

#[tokio::test]
async fn the_bus_counts_listeners_and_a_listener_hears_again_after_redis_restarts() {
    use mcp_server_core::fleet::Bus;
    let redis = Redis::start();
    let bus = stores(&redis, "bus").await.bus();
    assert_eq!(bus.publish("c", b"nobody").await.unwrap(), 0);
    // A pattern subscriber (monitoring, a probe) is no listener of the channel: a member
    // whose channel only it hears is gone (security review X2).
    let client = redis::Client::open(redis.url()).unwrap();
    let mut watcher = client.get_async_pubsub().await.unwrap();
    watcher.psubscribe("bus:bus:*").await.unwrap();
    assert_eq!(bus.publish("c", b"only a pattern hears").await.unwrap(), 0);
    let mut rx = bus.listen("c");
    let mut waited = 0;
    while bus.publish("c", b"hello").await.unwrap() == 0 {
        waited += 1;
        assert!(waited < 200, "the listener never subscribed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(2), rx.recv())
            .await
            .unwrap(),
        Some(b"hello".to_vec())
    );
    // Redis goes away: a publish fails with an error naming Redis, within the deadline.
    let port = redis.stop();
    let started = std::time::Instant::now();
    let err = bus.publish("c", b"lost").await.unwrap_err();
    assert!(err.0.starts_with("Redis PUBLISH"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // Back on the same port: the listener reconnects and hears new messages.
    let _redis = Redis::start_on(port);
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the listener did not come back"
        );
        if bus.publish("c", b"again").await.unwrap_or(0) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let heard = tokio::time::timeout(Duration::from_secs(2), rx.recv())
        .await
        .unwrap();
    assert_eq!(heard, Some(b"again".to_vec()));
}

/// Security review X2: a listener that reads nothing holds at most the bus's bytes bound, not
/// every message published to it (a thousand forwarded answers of a megabyte each).
#[tokio::test]
async fn a_bus_listener_that_reads_nothing_holds_at_most_its_bytes() {
    use mcp_server_core::fleet::{BUS_QUEUE_BYTES, Bus};
    let redis = Redis::start();
    let bus = stores(&redis, "bytes").await.bus();
    let mut rx = bus.listen("c");
    let mut waited = 0;
    while bus.publish("c", b"first").await.unwrap() == 0 {
        waited += 1;
        assert!(waited < 200, "the listener never subscribed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mib = vec![b'x'; 1024 * 1024];
    for _ in 0..(2 * BUS_QUEUE_BYTES / mib.len()) {
        assert_eq!(bus.publish("c", &mib).await.unwrap(), 1);
    }
    // Every message delivered to the listener's task: one more, small, comes after them.
    bus.publish("c", b"last").await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut held = 0;
    while let Ok(message) = rx.try_recv() {
        held += message.len();
    }
    assert!(
        held <= BUS_QUEUE_BYTES && held >= BUS_QUEUE_BYTES - mib.len(),
        "{held} bytes held"
    );
}

#[tokio::test]
async fn the_replay_guard_tells_a_store_away_from_a_state_already_used() {
    let redis = Redis::start();
    let guard = guard(&redis, "guard-away").await;
    let expires = (now_ms() / 1000 + 60) as f64;
    assert_eq!(guard.first_use_checked("j1", expires).await, Ok(true));
    // A second use waits for the (live) claimer up to the takeover wait, then refuses.
    assert_eq!(guard.first_use_checked("j1", expires).await, Ok(false));
    drop(redis);
    let away = guard.first_use_checked("j2", expires).await.unwrap_err();
    assert!(
        away.contains("Redis") || away.contains("liveness"),
        "{away}"
    );
    // The plain answer fails closed.
    assert!(!guard.first_use("j3", expires).await);
}

#[tokio::test]
async fn a_task_with_a_replay_survives_the_sweep_until_an_engine_takes_it() {
    let redis = Redis::start();
    let store = stores(&redis, "replay").await.task_store();
    let now = now_ms();
    for id in ["rerun", "plain"] {
        let mut r = record(id, Some(60_000));
        r.lease = Some(Lease {
            worker: "dead".into(),
            until_ms: now - 1,
        });
        store.create(r).await.unwrap();
    }
    assert!(
        store
            .set_replay("rerun", b"{\"runs\":1}".to_vec())
            .await
            .unwrap()
    );
    assert_eq!(
        store.set_replay("never", b"{}".to_vec()).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(store.lapsed(now).await.unwrap(), ["rerun"]);
    store.expire(now).await.unwrap();
    let plain = store.get("plain").await.unwrap().unwrap();
    assert!(
        matches!(plain.terminal, Some(Terminal::Failed(_))),
        "{plain:?}"
    );
    let rerun = store.get("rerun").await.unwrap().unwrap();
    assert!(
        rerun.terminal.is_none(),
        "a task with a replay is left for an engine"
    );
    assert_eq!(
        store.replay("rerun").await.unwrap(),
        Some(b"{\"runs\":1}".to_vec())
    );
    // An engine takes the lapsed lease: it is no longer lapsed.
    assert!(store.claim("rerun", "w2", now + 60_000).await.unwrap());
    assert!(store.lapsed(now).await.unwrap().is_empty());
    // Once the task ends, its replay is gone with it (security review X1), not kept for the
    // task's TTL.
    assert!(store.finish("rerun", Terminal::Cancelled).await.unwrap());
    assert_eq!(store.replay("rerun").await.unwrap(), None);
}
