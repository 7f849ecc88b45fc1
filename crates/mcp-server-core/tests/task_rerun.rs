//! Tasks that outlive their worker: two instances share one task store; the first runs a task
//! of an idempotent tool and one of another tool, answers a question of each, and dies (its
//! runtime is dropped, as a SIGKILL would stop it). The second instance's engine runs the
//! idempotent one again from the start, answering the question already answered from the
//! kept replay, and the other one fails "worker lost" as before.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::TestClient;
use mcp_server_core::Service;
use mcp_server_core::fleet::{Fleet, MemoryBus, MemorySessionStore};
use mcp_server_core::registry::{ElicitationResult, McpServer, ToolDef};
use mcp_server_core::tasks::{InMemoryTaskStore, TaskConfig, TaskStore, TaskSupport};
use mcp_types::tools::ToolAnnotations;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// The state keys every instance of these tests shares (as a fleet's `MCP_STATE_KEYS`): a
/// replay is sealed with them, and only an instance holding them opens it.
const KEY: &str = "0123456789abcdef0123456789abcdef";

/// The kind task `id`'s replay is sealed as (as the engine seals it), bound to the task.
fn replay_kind(id: &str) -> String {
    format!("mcp/task-replay/{id}")
}

/// Seals `replay` as task `id`'s, with the fleet's keys.
fn seal_replay(id: &str, replay: &str) -> Vec<u8> {
    let kind = replay_kind(id);
    let spec = mcp_state_seal::HandleSpec::new(&kind).ttl(Duration::from_secs(7 * 24 * 3600));
    keys()
        .seal_handle(&spec, replay, None)
        .unwrap()
        .into_bytes()
}

/// The fleet's keys as these tests' servers (`rerun-test`) bind them.
fn keys() -> mcp_state_seal::SealingBoundary {
    mcp_state_seal::RequestStateSecurity::keys([KEY])
        .unwrap()
        .bind(Some("rerun-test"))
        .unwrap()
}

fn declaring() -> Value {
    json!({"elicitation": {}, "extensions": {TASKS: {}}})
}

#[derive(Clone, Deserialize, JsonSchema)]
struct Answer {
    word: String,
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// An instance: `reindex` (idempotent) asks two words and answers them with how many times
/// its body started; `migrate` (not idempotent) asks one word, then never ends. Instance
/// `name` of a fleet: its second value is the member name its tasks are leased under.
fn instance(store: Arc<dyn TaskStore>, started: Arc<AtomicUsize>, name: &str) -> (Service, String) {
    instance_counting(store, started, Arc::new(AtomicUsize::new(0)), name)
}

/// [`instance`], counting into `answered` each time `migrate`'s body has taken its answer.
fn instance_counting(
    store: Arc<dyn TaskStore>,
    started: Arc<AtomicUsize>,
    answered: Arc<AtomicUsize>,
    name: &str,
) -> (Service, String) {
    let reindex = ToolDef::new("reindex")
        .arguments::<NoArgs>()
        .annotations(ToolAnnotations {
            idempotent_hint: Some(true),
            ..ToolAnnotations::default()
        })
        .task(TaskSupport::Optional)
        .handler(move |ctx, _: NoArgs| {
            let run = started.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                let mut words = Vec::new();
                for question in ["First word?", "Second word?"] {
                    match ctx.elicit::<Answer>(question).await {
                        Ok(ElicitationResult::Accepted(a)) => words.push(a.word),
                        Ok(_) => return Err("declined".to_owned()),
                        Err(e) => return Err(e.message),
                    }
                }
                Ok(format!("{} (run {run})", words.join(" ")))
            }
        });
    let migrate = ToolDef::new("migrate")
        .arguments::<NoArgs>()
        .task(TaskSupport::Optional)
        .handler(move |ctx, _: NoArgs| {
            let answered = answered.clone();
            async move {
                let _ = ctx.elicit::<Answer>("Proceed?").await;
                answered.fetch_add(1, Ordering::SeqCst);
                std::future::pending::<()>().await;
                "never"
            }
        });
    // Idempotent, and its first question names the instance it runs on: a re-run elsewhere
    // asks a different question under the same number.
    let asker = format!("Purge the cache of {name}?");
    let runs_on = name.to_owned();
    let purge = ToolDef::new("purge")
        .arguments::<NoArgs>()
        .annotations(ToolAnnotations {
            idempotent_hint: Some(true),
            ..ToolAnnotations::default()
        })
        .task(TaskSupport::Optional)
        .handler(move |ctx, _: NoArgs| {
            let (asker, runs_on) = (asker.clone(), runs_on.clone());
            async move {
                for question in [asker.as_str(), "Really?"] {
                    match ctx.elicit::<Answer>(question).await {
                        Ok(ElicitationResult::Accepted(_)) => {}
                        Ok(_) => return Err("declined".to_owned()),
                        Err(e) => return Err(e.message),
                    }
                }
                Ok(format!("purged by {runs_on}"))
            }
        });
    let fleet = Fleet::new(name, MemorySessionStore::new(), MemoryBus::new());
    let member = fleet.member().to_owned();
    let service = McpServer::new("rerun-test")
        .request_state_security(mcp_state_seal::RequestStateSecurity::keys([KEY]).unwrap())
        .fleet(fleet)
        .tool(reindex)
        .tool(migrate)
        .tool(purge)
        .tasks(
            TaskConfig::new()
                .shared_store(store)
                .lease(Duration::from_millis(300))
                .sweep_interval(Duration::from_millis(50))
                .poll_interval(Duration::from_millis(10)),
        )
        .into_service()
        .unwrap();
    (service, member)
}

async fn get(client: &mut TestClient, id: &str) -> Value {
    client
        .modern("tasks/get", json!({"taskId": id}), declaring())
        .await
}

async fn poll_until(client: &mut TestClient, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..500 {
        let got = get(client, id).await;
        if done(&got) {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "task {id} never reached the expected state: {}",
        get(client, id).await
    );
}

async fn answer(client: &mut TestClient, id: &str, key: &str, word: &str) {
    let ack = client
        .modern(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"word": word}}}}),
            declaring(),
        )
        .await;
    assert!(ack.get("result").is_some(), "{ack}");
}

async fn start(client: &mut TestClient, tool: &str) -> String {
    let created = client
        .modern(
            "tools/call",
            json!({"name": tool, "arguments": {}}),
            declaring(),
        )
        .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"].as_str().unwrap().to_owned()
}

fn asked(v: &Value) -> Vec<String> {
    v["result"]["inputRequests"]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_task_runs_again_on_another_instance_and_keeps_its_answers() {
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryTaskStore::new());
    let started = Arc::new(AtomicUsize::new(0));

    // The first instance, on a runtime of its own: it is dropped mid-task like a killed
    // process (every body and timer of it stops; nothing is written on the way out).
    let (first_store, first_started) = (store.clone(), started.clone());
    let (reindex, migrate, first) = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let ids = runtime.block_on(async move {
            let answered = Arc::new(AtomicUsize::new(0));
            let (service, member) =
                instance_counting(first_store, first_started, answered.clone(), "first");
            let mut client = TestClient::new(&service);
            let reindex = start(&mut client, "reindex").await;
            poll_until(&mut client, &reindex, |v| asked(v) == ["q1"]).await;
            answer(&mut client, &reindex, "q1", "hello").await;
            poll_until(&mut client, &reindex, |v| asked(v) == ["q2"]).await;
            let migrate = start(&mut client, "migrate").await;
            poll_until(&mut client, &migrate, |v| asked(v) == ["q1"]).await;
            answer(&mut client, &migrate, "q1", "yes").await;
            // Let migrate's body take its answer before the instance dies.
            for _ in 0..1_000 {
                if answered.load(Ordering::SeqCst) == 1 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            assert_eq!(
                answered.load(Ordering::SeqCst),
                1,
                "migrate took its answer"
            );
            (reindex, migrate, member)
        });
        drop(runtime);
        ids
    })
    .join()
    .unwrap();
    assert_eq!(started.load(Ordering::SeqCst), 1);

    // The second instance takes over when the lease lapses.
    let (service, _) = instance(store, started.clone(), "second");
    let mut client = TestClient::new(&service);
    let rerun = poll_until(&mut client, &reindex, |v| {
        v["result"]["statusMessage"]
            .as_str()
            .is_some_and(|m| m.starts_with("Running again (run 2)"))
    })
    .await;
    assert_eq!(rerun["result"]["status"], "input_required", "{rerun}");
    assert_eq!(
        asked(&rerun),
        ["q2"],
        "the re-run was not asked q1 again: its answer was kept"
    );
    answer(&mut client, &reindex, "q2", "world").await;
    let done = poll_until(&mut client, &reindex, |v| {
        v["result"]["status"] == "completed"
    })
    .await;
    assert_eq!(
        done["result"]["result"]["content"][0]["text"],
        "hello world (run 2)"
    );
    assert_eq!(started.load(Ordering::SeqCst), 2);

    let lost = poll_until(&mut client, &migrate, |v| v["result"]["status"] == "failed").await;
    // The failure names the process that was lost.
    assert!(first.starts_with("first~"), "{first}");
    assert_eq!(
        lost["result"]["statusMessage"],
        format!("The worker running this task ({first}) was lost")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_worker_is_lost_three_times_is_not_run_a_fourth() {
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryTaskStore::new());
    let started = Arc::new(AtomicUsize::new(0));
    let mut id = None;
    let mut last = String::new();
    // Three instances in turn, each dropped while the task waits for its first answer.
    for i in 0..3 {
        let (s, n, known) = (store.clone(), started.clone(), id.clone());
        let (task, member) = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let ran = runtime.block_on(async move {
                let (service, member) = instance(s, n.clone(), &format!("n{i}"));
                let mut client = TestClient::new(&service);
                let before = n.load(Ordering::SeqCst);
                let id = match known {
                    Some(id) => id,
                    None => start(&mut client, "reindex").await,
                };
                // Wait until this instance runs the body (a re-run after the first).
                for _ in 0..500 {
                    if n.load(Ordering::SeqCst) > before {
                        break;
                    }
                    let _ = get(&mut client, &id).await;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                assert!(n.load(Ordering::SeqCst) > before, "no run on this instance");
                (id, member)
            });
            drop(runtime);
            ran
        })
        .join()
        .unwrap();
        id = Some(task);
        last = member;
    }
    assert_eq!(started.load(Ordering::SeqCst), 3);
    let id = id.unwrap();
    let (service, _) = instance(store, started.clone(), "n3");
    let mut client = TestClient::new(&service);
    let failed = poll_until(&mut client, &id, |v| v["result"]["status"] == "failed").await;
    assert!(last.starts_with("n2~"), "{last}");
    assert_eq!(
        failed["result"]["statusMessage"],
        format!(
            "The worker running this task ({last}) was lost, the 3rd time; it is not run again"
        )
    );
    assert_eq!(started.load(Ordering::SeqCst), 3, "no fourth run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_asks_again_what_the_lost_run_took_without_keeping_it() {
    use mcp_server_core::tasks::{Lease, TaskRecord, system_now_ms};
    // The lost run had taken the answer to q1 (the key is used, nothing is outstanding or
    // delivered) but died before it was kept in the replay.
    let store = Arc::new(InMemoryTaskStore::new());
    let now = system_now_ms();
    store
        .create(TaskRecord {
            id: "t1".into(),
            owner: None,
            client_support: Default::default(),
            status_message: None,
            created_at_ms: now,
            last_updated_at_ms: now,
            ttl_ms: Some(60_000),
            poll_interval_ms: Some(10),
            outstanding: Default::default(),
            answers: Default::default(),
            used_keys: ["q1".to_owned()].into(),
            cancel_requested: false,
            terminal: None,
            lease: Some(Lease {
                worker: "dead".into(),
                until_ms: now - 1,
            }),
        })
        .await
        .unwrap();
    let replay = json!({"tool": "reindex", "arguments": {}, "protocolVersion": "2026-07-28",
        "capabilities": declaring(), "answered": {}, "runs": 1});
    assert!(
        store
            .set_replay("t1", seal_replay("t1", &replay.to_string()))
            .await
            .unwrap()
    );
    let started = Arc::new(AtomicUsize::new(0));
    let (service, _) = instance(store, started.clone(), "later");
    let mut client = TestClient::new(&service);
    let again = poll_until(&mut client, "t1", |v| asked(v) == ["q1-run2"]).await;
    assert_eq!(
        again["result"]["inputRequests"]["q1-run2"]["params"]["message"],
        "First word?"
    );
    answer(&mut client, "t1", "q1-run2", "again").await;
    poll_until(&mut client, "t1", |v| asked(v) == ["q2"]).await;
    answer(&mut client, "t1", "q2", "twice").await;
    let done = poll_until(&mut client, "t1", |v| v["result"]["status"] == "completed").await;
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "again twice (run 1)",
        "the counter is this process's: its first start of the body"
    );
}

/// Security review X8: a re-run's question is answered from the lost run only when it is the
/// same question. Here run 2 asks "Purge the cache of second?" where run 1 was answered
/// "Purge the cache of first?": the user is asked again (under a key of run 2), and the task
/// does not complete on the old consent. Its second question, the same in both runs and left
/// standing by the lost run, is asked once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_asking_another_question_is_not_answered_with_the_lost_runs_consent() {
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryTaskStore::new());
    let first_store = store.clone();
    let purge = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let (service, _) = instance(first_store, Arc::new(AtomicUsize::new(0)), "first");
            let mut client = TestClient::new(&service);
            let purge = start(&mut client, "purge").await;
            poll_until(&mut client, &purge, |v| asked(v) == ["q1"]).await;
            answer(&mut client, &purge, "q1", "yes").await;
            // The consent is taken and kept: the body asks its second question.
            poll_until(&mut client, &purge, |v| asked(v) == ["q2"]).await;
            purge
        })
    })
    .join()
    .unwrap();

    let (service, _) = instance(store, Arc::new(AtomicUsize::new(0)), "second");
    let mut client = TestClient::new(&service);
    let rerun = poll_until(&mut client, &purge, |v| {
        asked(v).contains(&"q1-run2".to_owned())
    })
    .await;
    assert_eq!(rerun["result"]["status"], "input_required", "{rerun}");
    assert_eq!(
        rerun["result"]["inputRequests"]["q1-run2"]["params"]["message"],
        "Purge the cache of second?",
        "{rerun}"
    );
    answer(&mut client, &purge, "q1-run2", "yes").await;
    // "Really?" is the question the lost run left standing: it stands, under its key.
    let standing = poll_until(&mut client, &purge, |v| {
        !asked(v).contains(&"q1-run2".to_owned()) && asked(v).contains(&"q2".to_owned())
    })
    .await;
    assert_eq!(asked(&standing), ["q2"], "{standing}");
    answer(&mut client, &purge, "q2", "yes").await;
    let done = poll_until(&mut client, &purge, |v| {
        v["result"]["status"] == "completed"
    })
    .await;
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "purged by second",
        "{done}"
    );
}

/// Security review X1: a task's replay keeps what its re-run needs and nothing a client pads
/// its call with: the arguments the tool declares (not a 1 MiB unknown one), the capabilities
/// as a re-run reads them (not a padded `experimental`), and it is gone once the task ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_keeps_only_what_a_rerun_needs_and_goes_with_its_task() {
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryTaskStore::new());
    let (service, _) = instance(store.clone(), Arc::new(AtomicUsize::new(0)), "only");
    let mut client = TestClient::new(&service);
    let padded = json!({
        "elicitation": {},
        "extensions": {TASKS: {"padding": "y".repeat(6 * 1024)}},
        "experimental": {"padding": {"y": "y".repeat(6 * 1024)}},
    });
    let created = client
        .modern(
            "tools/call",
            json!({"name": "reindex", "arguments": {"pad": "x".repeat(1 << 20)}}),
            padded,
        )
        .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let kept = store
        .replay(&id)
        .await
        .unwrap()
        .expect("an idempotent task keeps a replay");
    assert!(kept.len() < 1024, "{} bytes kept", kept.len());
    // Sealed with the fleet's keys: opened here with them.
    let kind = replay_kind(&id);
    let spec = mcp_state_seal::HandleSpec::new(&kind).ttl(Duration::from_secs(7 * 24 * 3600));
    let opened = keys()
        .open_handle(&spec, std::str::from_utf8(&kept).unwrap(), None)
        .await
        .expect("the replay is sealed with the fleet's keys");
    let replay: Value = serde_json::from_str(&opened).unwrap();
    assert_eq!(replay["arguments"], json!({}), "{replay}");
    assert_eq!(
        replay["capabilities"],
        json!({"elicitation": {}, "extensions": {TASKS: {}}}),
        "{replay}"
    );
    poll_until(&mut client, &id, |v| asked(v) == ["q1"]).await;
    answer(&mut client, &id, "q1", "a").await;
    poll_until(&mut client, &id, |v| asked(v) == ["q2"]).await;
    answer(&mut client, &id, "q2", "b").await;
    poll_until(&mut client, &id, |v| v["result"]["status"] == "completed").await;
    assert_eq!(
        store.replay(&id).await.unwrap(),
        None,
        "the finished task's replay is gone"
    );
}

/// Security review X10: a process that can write to the task store but does not hold the
/// fleet's keys cannot make an instance run anything: a replay it writes is not sealed with
/// them and runs nothing. And a replay sealed with the keys still runs only a tool that
/// declares itself idempotent, as the task's owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_replay_runs_no_tool_that_may_not_run_again_and_no_one_else() {
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryTaskStore::new());
    let first_store = store.clone();
    let ids = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let (service, _) = instance(first_store, Arc::new(AtomicUsize::new(0)), "first");
            let mut client = TestClient::new(&service);
            let mut ids = Vec::new();
            for tool in ["reindex", "migrate", "reindex", "reindex"] {
                let id = start(&mut client, tool).await;
                poll_until(&mut client, &id, |v| asked(v) == ["q1"]).await;
                ids.push(id);
            }
            ids
        })
    })
    .join()
    .unwrap();
    let [unsealed, migrate, other, moved] = <[String; 4]>::try_from(ids).unwrap();
    let replay = |tool: &str, principal: Value| {
        json!({"tool": tool, "arguments": {}, "protocolVersion": "2026-07-28",
            "capabilities": {"elicitation": {}}, "principal": principal, "runs": 1})
        .to_string()
    };
    // Without the keys: plain JSON naming the task's own tool and owner.
    assert!(
        store
            .set_replay(&unsealed, replay("reindex", Value::Null).into_bytes())
            .await
            .unwrap()
    );
    // With the keys (a bug, an insider): another tool, another principal.
    assert!(
        store
            .set_replay(
                &migrate,
                seal_replay(&migrate, &replay("migrate", Value::Null))
            )
            .await
            .unwrap()
    );
    assert!(
        store
            .set_replay(
                &other,
                seal_replay(&other, &replay("reindex", json!({"clientId": "mallory"})))
            )
            .await
            .unwrap()
    );
    // A replay sealed with the keys for another task, moved under this one's id.
    assert!(
        store
            .set_replay(&moved, seal_replay(&other, &replay("reindex", Value::Null)))
            .await
            .unwrap()
    );
    let started = Arc::new(AtomicUsize::new(0));
    let (service, _) = instance(store, started.clone(), "second");
    let mut client = TestClient::new(&service);
    for (id, ending) in [
        (
            &unsealed,
            "and it cannot run again: its replay is not sealed with this server's keys for this task",
        ),
        (
            &moved,
            "and it cannot run again: its replay is not sealed with this server's keys for this task",
        ),
        (
            &migrate,
            "tool 'migrate' is not idempotent: its task does not run again",
        ),
        (
            &other,
            "and it cannot run again: its replay names another principal than the task's owner",
        ),
    ] {
        let failed = poll_until(&mut client, id, |v| v["result"]["status"] == "failed").await;
        let why = failed["result"]["statusMessage"].as_str().unwrap();
        assert!(why.ends_with(ending), "{why}");
    }
    assert_eq!(started.load(Ordering::SeqCst), 0, "reindex never ran here");
}
